package process_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/adapters/process"
	"github.com/chaoskit/chaoskit/adapters/process/fusefs"
	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/internal/needs"
	"github.com/spf13/afero"
)

// BenchmarkStateMemory measures a campaign's memory against the size of what its state command
// prints and the number of its cases, at the sizes issue 33 found growing: a state of 4 MiB on a
// FUSE disk (kill and power), and one of 128 MiB on a plain disk (kill), each at two campaign
// sizes. It reports the peak of the live heap while the campaign runs (sampled every 20 ms) and
// what the campaign leaves alive, its report dropped, both in MiB: flat in the cases, the second
// campaign of each size no higher than the first. Every kill case ends with other files (a log of
// where each process started), so every case's disk is new to the state command.
//
//	go test ./adapters/process -run '^$' -bench StateMemory -benchtime 1x
func BenchmarkStateMemory(b *testing.B) {
	for _, bc := range []struct {
		mib   int
		disk  process.Disk
		kinds []faults.Kind
		cases []int
	}{
		{4, process.FUSE, []faults.Kind{faults.Kill, faults.Power}, []int{37, 74}},
		{128, process.Plain, []faults.Kind{faults.Kill}, []int{4, 9}},
	} {
		for _, n := range bc.cases {
			b.Run(fmt.Sprintf("state=%dMiB/disk=%s/cases=%d", bc.mib, bc.disk, n), func(b *testing.B) {
				if bc.disk == process.FUSE {
					needs.Err(b, fusefs.Available())
				}
				for range b.N {
					_, peak, kept := stateCampaign(b, bc.mib, bc.disk, bc.kinds, n)
					b.ReportMetric(peak, "peak-heap-MiB")
					b.ReportMetric(kept, "kept-MiB")
				}
			})
		}
	}
}

// stateCampaign runs a campaign of n cases of the kinds (0: every exhaustive case) over a
// harness whose state command prints mib MiB, and returns how many cases it ran, the peak of the
// live heap while it ran and what it left alive, its report dropped, in MiB.
func stateCampaign(b testing.TB, mib int, disk process.Disk, kinds []faults.Kind, n int) (cases int, peak, kept float64) {
	client, _ := filepath.Abs("python")
	harnessPy := `import os, sys; sys.path.insert(0, sys.argv[1]); import chaoskit
d = os.environ["CHAOSKIT_STATE_DIR"]
if sys.argv[2] == "state":
    import json
    files = {n: open(os.path.join(d, n)).read() for n in sorted(os.listdir(d))}
    json.dump({"files": files, "pad": "x" * (int(sys.argv[3]) << 20)}, sys.stdout)
    sys.exit(0)
ck = chaoskit.connect()
with open(os.path.join(d, "starts.log"), "a") as f:
    f.write("start at %d\n" % len([n for n in os.listdir(d) if n.startswith("step")]))
for i in range(12):
    p = os.path.join(d, "step%d" % i)
    if not os.path.exists(p):
        ck.call("create_po", {"step": i}, key="k%d" % i)
        with open(p + ".tmp", "w") as f:
            f.write("done")
            f.flush(); os.fsync(f.fileno())
        os.rename(p + ".tmp", p)
        fd = os.open(d, os.O_RDONLY); os.fsync(fd); os.close(fd)
        ck.mark("step %d" % i)
ck.done("ok")`
	argv := func(mode string) []string {
		return []string{pythonExe(b), "-S", "-B", "-c", harnessPy, client, mode, fmt.Sprint(mib)}
	}
	target := process.Target{Argv: argv("run"), StateArgv: argv("state"), Ignore: []string{`$.files["starts.log"]`}, ToolList: tools, Disk: disk}
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	runtime.GC()
	before := heap()
	var top atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for t := time.NewTicker(20 * time.Millisecond); ; {
			if h := heap(); h > top.Load() {
				top.Store(h)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	c := &campaign.Campaign{Targets: []campaign.Target{{Name: "starts", New: harness.Fresh(target)}},
		Options: campaign.Options{Faults: kinds, Cases: n}}
	rep, err := c.Run(context.Background(), campaign.RunOptions{FS: afero.NewOsFs(), Dir: b.TempDir()})
	close(done)
	wg.Wait()
	if err != nil {
		b.Fatal(err)
	}
	cases = rep.Summary.Targets[0].Cases
	if n > 0 && cases != n || rep.Summary.Targets[0].Failed > 0 {
		b.Fatalf("%d cases, %d failed; want %d, passing", cases, rep.Summary.Targets[0].Failed, n)
	}
	rep = nil
	runtime.GC()
	const MiB = 1 << 20
	return cases, float64(top.Load()-before) / MiB, float64(int64(heap())-int64(before)) / MiB
}
