package fusefs_test

import (
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/spf13/afero"
)

// Mount makes no request of its own on the new mount that would reach fsys through Do (it read
// its connection number with a stat of the mount point, a request that Do had to run while the
// caller was still inside Mount); with ServeOnly it also skips go-fuse's probe, which go-fuse
// answers itself. Another process then uses the mount as usual.
func TestServeOnlyMakesNoRequestOfItsOwn(t *testing.T) {
	for _, serveOnly := range []bool{false, true} {
		var ops atomic.Int32
		fsys := afero.NewMemMapFs()
		afero.WriteFile(fsys, "hello", []byte("hi\n"), 0o644)
		_, dir := mount(t, fsys, fusefs.Options{ServeOnly: serveOnly, Do: func(op func()) { ops.Add(1); op() }})
		if got := ops.Load(); got != 0 {
			t.Errorf("ServeOnly %v: Mount ran %d ops of its own", serveOnly, got)
		}
		out, err := exec.Command("cat", dir+"/hello").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "hi" {
			t.Errorf("ServeOnly %v: another process reads %q, %v", serveOnly, out, err)
		}
	}
}
