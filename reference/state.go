package reference

import "fmt"

// The phases of a run.
const (
	Running      = "running"
	WaitingTool  = "waiting_tool"  // an asynchronous tool call is out; its completion will come as a message
	WaitingHuman = "waiting_human" // an approval is requested; the decision will come as a message
	Completed    = "completed"
	Rejected     = "rejected" // a human rejected the approval: the run ends there
)

// State is the agent's run state: a document folded from the write-ahead log, and cached in a
// snapshot. It is what the oracle compares after a run.
type State struct {
	RunID      string       `json:"run_id"`
	Goal       string       `json:"goal"`
	Phase      string       `json:"phase"`
	Awaiting   string       `json:"awaiting,omitempty"` // the topic a waiting run waits on
	Cursor     int          `json:"cursor"`             // the next step to do
	Planned    int          `json:"planned"`            // the last step the model has planned, or -1
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
	Status     string `json:"status"` // pending, committed, abandoned
	ExternalID string `json:"external_id,omitempty"`
}

// Message is one message of the agent's transcript.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Meta is a message's metadata: where it came from and when.
type Meta struct {
	Source string `json:"source"` // user, model, tool, summary, human
	Step   int    `json:"step"`
	At     int64  `json:"at"` // virtual time, Unix seconds
}

// Result is what a run returns: the run, how it ended, and the external ids its steps produced.
type Result struct {
	RunID   string
	Phase   string
	Outputs []string
}

// record is one write-ahead log record. The state is the fold of the records.
type record struct {
	Type   string   `json:"t"` // start, plan, epoch, model, intent, await, commit, reject, done
	Step   int      `json:"s"`
	RunID  string   `json:"run,omitempty"`
	Goal   string   `json:"goal,omitempty"`
	Plan   []string `json:"plan,omitempty"`
	Tool   string   `json:"tool,omitempty"`
	Key    string   `json:"key,omitempty"`
	Topic  string   `json:"topic,omitempty"`
	Output string   `json:"out,omitempty"`
	Msg    *Message `json:"msg,omitempty"`
	Base   int      `json:"base,omitempty"` // epoch: the end of the sound log it continues
	// Human marks an await for a person's decision rather than a tool's completion.
	Human bool `json:"human,omitempty"`
	// Compact, on a commit, compacts the transcript once the step is in: one record, so that no
	// crash can fall between the commit and the compaction.
	Compact bool  `json:"compact,omitempty"`
	At      int64 `json:"at"` // virtual time, Unix seconds
}

// apply folds one record into the state.
func (s *State) apply(r record) error {
	switch r.Type {
	case "start":
		*s = State{RunID: r.RunID, Goal: r.Goal, Phase: Running, Plan: r.Plan, Planned: -1, InProgress: true}
	case "plan": // a new version of the agent extends the plan of a run in flight
		s.Plan = r.Plan
	case "epoch":
	case "model":
		if r.Msg == nil {
			return fmt.Errorf("model record for step %d has no message", r.Step)
		}
		s.Planned = r.Step
	case "intent":
		if e := s.entry(r.Step); e != nil && e.Status == "pending" {
			e.Status = "abandoned" // the step was planned again: its earlier intent is superseded
		}
		s.Ledger = append(s.Ledger, Entry{Step: r.Step, Tool: r.Tool, Key: r.Key, Status: "pending"})
	case "await":
		s.Phase, s.Awaiting = WaitingTool, r.Topic
		if r.Human {
			s.Phase = WaitingHuman
		}
	case "commit":
		if e := s.entry(r.Step); e != nil && e.Status == "pending" {
			e.Status, e.ExternalID = "committed", r.Output
		}
		s.Phase, s.Awaiting = Running, ""
		s.Completed = append(s.Completed, StepResult{Step: r.Step, Name: s.stepName(r.Step), Output: r.Output})
		s.Cursor = r.Step + 1
	case "reject":
		s.Phase, s.Awaiting, s.InProgress = Rejected, "", false
	case "done":
		s.Phase, s.InProgress = Completed, false
	default:
		return fmt.Errorf("unknown record type %q", r.Type)
	}
	if m, meta, ok := r.message(); ok {
		s.Messages = append(s.Messages, m)
		s.Meta = append(s.Meta, meta)
	}
	if r.Type == "commit" && r.Compact {
		s.compact(r.At)
	}
	return nil
}

// message returns the message a record adds to the transcript, and its metadata; ok is false
// if it adds none.
func (r record) message() (m Message, meta Meta, ok bool) {
	meta = Meta{Step: r.Step, At: r.At}
	switch r.Type {
	case "start":
		m, meta.Source, meta.Step = Message{Role: "user", Content: r.Goal}, "user", -1
	case "model":
		if r.Msg == nil {
			return m, meta, false
		}
		m, meta.Source = *r.Msg, "model"
	case "commit":
		m, meta.Source = Message{Role: "user", Content: "[tool_result " + r.Output + "]"}, "tool"
	case "reject":
		m, meta.Source = Message{Role: "user", Content: "[rejected by a human]"}, "human"
	default:
		return m, meta, false
	}
	return m, meta, true
}

func (s *State) stepName(i int) string {
	if i >= 0 && i < len(s.Plan) {
		return s.Plan[i]
	}
	return fmt.Sprint(i)
}

// entry returns the latest ledger entry of a step, or nil.
func (s *State) entry(step int) *Entry {
	for i := len(s.Ledger) - 1; i >= 0; i-- {
		if s.Ledger[i].Step == step {
			return &s.Ledger[i]
		}
	}
	return nil
}

// revision counts the intents recorded for a step: a step planned again gets a new key.
func (s *State) revision(step int) int {
	n := 0
	for _, e := range s.Ledger {
		if e.Step == step {
			n++
		}
	}
	return n
}

// over reports whether the run has ended.
func (s *State) over() bool { return s.Phase == Completed || s.Phase == Rejected }

// compact replaces the transcript but its first (the task) and last two messages with a
// summary, rebuilding the metadata from the same canonical list so that the two stay in step.
func (s *State) compact(at int64) {
	if len(s.Messages) <= 3 {
		return
	}
	keep := len(s.Messages) - 2
	summary := Message{Role: "assistant", Content: fmt.Sprintf("[summary of %d messages]", keep-1)}
	s.Messages = append([]Message{s.Messages[0], summary}, s.Messages[keep:]...)
	if len(s.Meta) < 3 {
		return
	}
	// The metadata is compacted by its own length: in step with the messages it is the same
	// cut; out of step (read back from somewhere else) it stays out of step rather than panicking.
	mkeep := len(s.Meta) - 2
	s.Meta = append([]Meta{s.Meta[0], {Source: "summary", Step: s.Cursor - 1, At: at}}, s.Meta[mkeep:]...)
}
