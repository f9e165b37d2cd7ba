package reference

import "fmt"

// State is the agent's run state: a document rebuilt from the write-ahead log, and cached in a
// snapshot. It is what the oracle compares after a run.
type State struct {
	RunID      string       `json:"run_id"`
	Goal       string       `json:"goal"`
	Phase      string       `json:"phase"`   // running, completed
	Cursor     int          `json:"cursor"`  // the next step to do
	Planned    int          `json:"planned"` // the last step the model has planned, or -1
	Plan       []string     `json:"plan"`
	Completed  []StepResult `json:"completed"`
	Ledger     []Entry      `json:"ledger"` // side effects: pending from intent, committed on reply
	Messages   []Message    `json:"messages"`
	Meta       []Meta       `json:"meta"`        // one per message, in step
	InProgress bool         `json:"in_progress"` // a run is under way; a clean final save clears it
}

// StepResult is a completed step and what its tool returned.
type StepResult struct {
	Step   int    `json:"step"`
	Name   string `json:"name"`
	Output string `json:"output"`
}

// Entry is a side-effect ledger entry.
type Entry struct {
	Step       int    `json:"step"`
	Tool       string `json:"tool"`
	Key        string `json:"key"`
	Status     string `json:"status"` // pending, committed
	ExternalID string `json:"external_id,omitempty"`
}

// Message is one message of the agent's transcript.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Meta is a message's metadata: where it came from and when.
type Meta struct {
	Source string `json:"source"` // user, model, tool, summary
	Step   int    `json:"step"`
	At     int64  `json:"at"` // virtual time, Unix seconds
}

// Result is what a run returns: the run and the external ids its steps produced.
type Result struct {
	RunID   string
	Outputs []string
}

// record is one write-ahead log record. The state is the fold of the records.
type record struct {
	Type   string   `json:"t"` // start, model, intent, commit, done
	Step   int      `json:"s"`
	RunID  string   `json:"run,omitempty"`
	Goal   string   `json:"goal,omitempty"`
	Plan   []string `json:"plan,omitempty"`
	Tool   string   `json:"tool,omitempty"`
	Key    string   `json:"key,omitempty"`
	Output string   `json:"out,omitempty"`
	Msg    *Message `json:"msg,omitempty"`
	// Compact, on a commit, compacts the transcript once the step is in: one record, so that no
	// crash can fall between the commit and the compaction.
	Compact bool  `json:"compact,omitempty"`
	At      int64 `json:"at"` // virtual time, Unix seconds
}

// apply folds one record into the state and returns the metadata of the messages it added.
func (s *State) apply(r record) ([]Meta, error) {
	n := len(s.Meta)
	switch r.Type {
	case "start":
		*s = State{RunID: r.RunID, Goal: r.Goal, Phase: "running", Plan: r.Plan, Planned: -1, InProgress: true}
		s.add(Message{Role: "user", Content: r.Goal}, "user", -1, r.At)
	case "model":
		if r.Msg == nil {
			return nil, fmt.Errorf("model record for step %d has no message", r.Step)
		}
		s.add(*r.Msg, "model", r.Step, r.At)
		s.Planned = r.Step
	case "intent":
		s.Ledger = append(s.Ledger, Entry{Step: r.Step, Tool: r.Tool, Key: r.Key, Status: "pending"})
	case "commit":
		if e := s.entry(r.Step); e != nil {
			e.Status, e.ExternalID = "committed", r.Output
		}
		s.Completed = append(s.Completed, StepResult{Step: r.Step, Name: s.stepName(r.Step), Output: r.Output})
		s.add(Message{Role: "user", Content: "[tool_result " + r.Output + "]"}, "tool", r.Step, r.At)
		s.Cursor = r.Step + 1
		if r.Compact {
			added := append([]Meta(nil), s.Meta[n:]...)
			s.compact(r.At)
			return added, nil
		}
	case "done":
		s.Phase, s.InProgress = "completed", false
	default:
		return nil, fmt.Errorf("unknown record type %q", r.Type)
	}
	return s.Meta[n:], nil
}

func (s *State) stepName(i int) string {
	if i >= 0 && i < len(s.Plan) {
		return s.Plan[i]
	}
	return fmt.Sprint(i)
}

func (s *State) add(m Message, source string, step int, at int64) {
	s.Messages = append(s.Messages, m)
	s.Meta = append(s.Meta, Meta{Source: source, Step: step, At: at})
}

// entry returns the ledger entry of a step, or nil.
func (s *State) entry(step int) *Entry {
	for i := range s.Ledger {
		if s.Ledger[i].Step == step {
			return &s.Ledger[i]
		}
	}
	return nil
}

// compact replaces the transcript but its first (the task) and last two messages with a
// summary, rebuilding the metadata from the same canonical list so that the two stay in step.
func (s *State) compact(at int64) {
	if len(s.Messages) <= 3 {
		return
	}
	keep := len(s.Messages) - 2
	summary := Message{Role: "assistant", Content: fmt.Sprintf("[summary of %d messages]", keep-1)}
	msgs := []Message{s.Messages[0], summary}
	meta := []Meta{s.Meta[0], {Source: "summary", Step: s.Cursor - 1, At: at}}
	s.Messages = append(msgs, s.Messages[keep:]...)
	s.Meta = append(meta, s.Meta[keep:]...)
}
