package fsutil

import (
	"bytes"
	"errors"

	"github.com/zeebo/blake3"
)

// Every stored format of evpack is sealed the same way: a magic string that
// names the format and its version, the payload, and a BLAKE3-256 checksum of
// all that precedes it, so a truncated or corrupted file is caught before a
// byte of it is trusted.

// sumSize is the length of the checksum.
const sumSize = 32

// Errors Unseal returns; callers wrap them with their format's error and the
// file's path.
var (
	ErrNotThisFormat = errors.New("not in this format (wrong header)")
	ErrChecksum      = errors.New("checksum mismatch (truncated or corrupted)")
)

// Seal appends the checksum to b, which must start with the format's magic.
func Seal(b []byte) []byte {
	sum := blake3.Sum256(b)
	return append(b, sum[:]...)
}

// Unseal checks that raw starts with magic, holds at least minPayload bytes
// after it, and ends with the checksum of the rest; it returns the payload
// between magic and checksum.
func Unseal(raw []byte, magic string, minPayload int) ([]byte, error) {
	if len(raw) < len(magic)+minPayload+sumSize || string(raw[:len(magic)]) != magic {
		return nil, ErrNotThisFormat
	}
	body, sum := raw[:len(raw)-sumSize], raw[len(raw)-sumSize:]
	if want := blake3.Sum256(body); !bytes.Equal(want[:], sum) {
		return nil, ErrChecksum
	}
	return body[len(magic):], nil
}
