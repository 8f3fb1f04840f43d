package eval

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// Passage is one ObliQA corpus passage.
type Passage struct {
	ID         string // the passage's unique "ID"
	DocumentID int
	PassageID  string // the document's own numbering, e.g. "1.1.2"; not unique
	Text       string
}

// Question is one ObliQA question with its gold passage IDs.
type Question struct {
	ID    string
	Text  string
	Gold  []string // passage IDs, in the order the dataset lists them
	Group int
}

// ObliQA is a loaded corpus and question set.
type ObliQA struct {
	Passages  []Passage // files in DocumentID order, passages in file order
	Questions []Question
	Unmapped  int // gold (DocumentID, PassageID) keys absent from the corpus
}

// LoadObliQA reads documents/1.json..N.json from docsDir and the questions
// file, and maps each gold (DocumentID, PassageID) to the ID of the FIRST
// corpus passage with that key, as the official scorer does.
func LoadObliQA(docsDir, questionsFile string) (*ObliQA, error) {
	ents, err := os.ReadDir(docsDir)
	if err != nil {
		return nil, fmt.Errorf("eval: obliqa: %w", err)
	}
	var nums []int
	for _, e := range ents {
		var n int
		if _, err := fmt.Sscanf(e.Name(), "%d.json", &n); err == nil && e.Name() == strconv.Itoa(n)+".json" {
			nums = append(nums, n)
		}
	}
	if len(nums) == 0 {
		return nil, fmt.Errorf("eval: obliqa: no N.json documents in %s", docsDir)
	}
	slices.Sort(nums)
	o := &ObliQA{}
	first := map[string]string{}
	for _, n := range nums {
		path := filepath.Join(docsDir, strconv.Itoa(n)+".json")
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("eval: obliqa: %w", err)
		}
		var ps []struct {
			ID         string `json:"ID"`
			DocumentID int    `json:"DocumentID"`
			PassageID  string `json:"PassageID"`
			Passage    string `json:"Passage"`
		}
		if err := json.Unmarshal(raw, &ps); err != nil {
			return nil, fmt.Errorf("eval: obliqa: %s: %w", path, err)
		}
		for _, p := range ps {
			key := fmt.Sprintf("%d\x00%s", p.DocumentID, p.PassageID)
			if _, ok := first[key]; !ok {
				first[key] = p.ID
			}
			o.Passages = append(o.Passages, Passage{ID: p.ID, DocumentID: p.DocumentID, PassageID: p.PassageID, Text: p.Passage})
		}
	}
	raw, err := os.ReadFile(questionsFile)
	if err != nil {
		return nil, fmt.Errorf("eval: obliqa: %w", err)
	}
	var qs []struct {
		QuestionID string `json:"QuestionID"`
		Question   string `json:"Question"`
		Passages   []struct {
			DocumentID int    `json:"DocumentID"`
			PassageID  string `json:"PassageID"`
		} `json:"Passages"`
		Group int `json:"Group"`
	}
	if err := json.Unmarshal(raw, &qs); err != nil {
		return nil, fmt.Errorf("eval: obliqa: %s: %w", questionsFile, err)
	}
	for _, q := range qs {
		eq := Question{ID: q.QuestionID, Text: q.Question, Group: q.Group}
		seen := map[string]bool{}
		for _, g := range q.Passages {
			id, ok := first[fmt.Sprintf("%d\x00%s", g.DocumentID, g.PassageID)]
			if !ok {
				o.Unmapped++
				id = fmt.Sprintf("unmapped:%d:%s", g.DocumentID, g.PassageID)
			}
			if !seen[id] {
				seen[id] = true
				eq.Gold = append(eq.Gold, id)
			}
		}
		o.Questions = append(o.Questions, eq)
	}
	return o, nil
}
