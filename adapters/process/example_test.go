package process_test

import (
	"fmt"

	"github.com/chaoskit/chaoskit/adapters/process"
)

// Init comes first in main (and in TestMain): in a copy of the program that chaoskit started as
// one of its helpers it runs the helper and exits; anywhere else it returns at once.
func ExampleInit() {
	process.Init()
	fmt.Println("chaoskit may start its helpers as copies of this program")
	// Output: chaoskit may start its helpers as copies of this program
}
