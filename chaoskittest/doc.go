// Package chaoskittest runs chaoskit from go test: Check explores a target under faults and
// fails the test for every case that does not pass, printing the go test command that replays
// it, and Schedules is a rapid generator of fault schedules for properties of your own.
//
// It is the only package of chaoskit that imports testing, and the one that registers the
// -chaoskit.* test flags:
//
//	-chaoskit.schedule='kill@4,power@9'   run just this schedule (what a failure's replay command does)
//	-chaoskit.seed=N                      override Options.Seed
//	-chaoskit.out=DIR                     write each Check's report directory to DIR/TEST
//
// A Go target that reaches its model, MCP tools or REST services over HTTP gets them as a
// command under chaoskit run does (--cassette, --tool, --http) when wrapped with services.Wrap
// in the newTarget given to Check, its SDK given services.Client(env) (ExampleCheck_services).
//
// A program that imports chaoskit's other packages links neither testing nor rapid, and
// registers no flag.
package chaoskittest
