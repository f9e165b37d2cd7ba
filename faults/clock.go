package faults

import (
	"sync"
	"time"
)

// Clock is virtual time. It moves only when the simulation moves it, so an hour-long wait costs
// nothing and every run sees the same instants.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock reading start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the current virtual time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d; a negative d panics, because time does not go back.
func (c *Clock) Advance(d time.Duration) {
	if d < 0 {
		panic("faults: Clock.Advance with a negative duration")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t; t before the current time panics.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.Before(c.now) {
		panic("faults: Clock.Set to an earlier time")
	}
	c.now = t
}
