// Package sharecheck checks, for tests, the rule that sharing recoveries changes no report: a
// campaign run with cases of one crash state sharing a recovery gives, to the byte (wall-clock
// fields aside), the report each case running its own recovery gives.
package sharecheck
