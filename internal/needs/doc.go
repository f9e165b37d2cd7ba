// Package needs is how chaoskit's own tests say what they need from the machine: a program
// (node, python3, chromium, a FUSE device) that the repository does not carry.
//
// Without it a test is skipped with one line naming what is missing and the command that
// installs it. Under CI=true the same line fails the test instead: CI must prove that the real
// thing ran, and a skip would let it pass without running.
package needs
