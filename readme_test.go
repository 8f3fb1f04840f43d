package evpack_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// readmeSnippet returns the body of README.md's first ```go block.
func readmeSnippet(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(raw), "\n```go\n")
	if !ok {
		t.Fatal("README.md has no ```go block")
	}
	body, _, ok := strings.Cut(rest, "\n```\n")
	if !ok {
		t.Fatal("README.md's first ```go block is not closed")
	}
	return body + "\n"
}

// TestREADMESnippetBuilds copies README.md's first Go block into a new
// module outside the repository that requires evpack through a replace
// line, as a user's service would, and builds it: the snippet a user copies
// must compile as written. Modules come from the module cache (GOPROXY=off);
// only if that is not enough does it retry through the default proxy.
func TestREADMESnippetBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module: skipped with -short")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	snippet := readmeSnippet(t)
	if !strings.HasPrefix(snippet, "package main\n") {
		t.Fatalf("README.md's first Go block must be a whole program (package main), got:\n%s", snippet)
	}
	dir := t.TempDir()
	gomod := "module example.com/adopter\n\ngo 1.26\n\nrequire github.com/evpack/evpack v0.0.0\n\nreplace github.com/evpack/evpack => " + root + "\n"
	for name, data := range map[string]string{"go.mod": gomod, "main.go": snippet} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := os.ReadFile("go.sum") // the repository's checksums: the same dependency versions
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	goCmd := func(proxy string, args ...string) error {
		cmd := exec.Command(goBin, args...)
		cmd.Dir = dir
		env := []string{"GOFLAGS=-mod=mod", "GOWORK=off"}
		if proxy != "" {
			env = append(env, "GOPROXY="+proxy)
		}
		cmd.Env = append(os.Environ(), env...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return errors.New("go " + strings.Join(args, " ") + ": " + err.Error() + "\n" + out.String())
		}
		return nil
	}
	// With the repository's go.sum and -mod=mod, go build adds the
	// requirements the snippet's imports need from the module cache alone;
	// go mod tidy would also want the test dependencies of every
	// dependency, which a cache filled by building evpack need not hold.
	build := func(proxy string) error { return goCmd(proxy, "build", "-o", filepath.Join(dir, "adopter"), ".") }
	err = build("off")
	if err != nil && strings.Contains(err.Error(), "GOPROXY=off") {
		t.Logf("the module cache is not enough, tidying through the default proxy: %v", err)
		if err := goCmd("", "mod", "tidy"); err != nil {
			t.Fatal(err)
		}
		err = build("")
	}
	if err != nil {
		t.Fatalf("README.md's Go snippet does not build in a user's module:\n%v\nsnippet:\n%s", err, snippet)
	}
}
