package faults_test

import (
	"bytes"
	"fmt"
	"os"

	"github.com/chaoskit/chaoskit/faults"
	"github.com/spf13/afero"
)

// A rename without an fsync of its directory is undone by a power loss.
func ExampleDisk_Crash() {
	disk := faults.NewDisk(faults.DiskOptions{})
	save := func(name, body string) {
		f, _ := disk.Create(name)
		f.WriteString(body)
		f.Sync() // the data is durable, the directory entry is not yet
		f.Close()
	}
	save("state.json", "v1")
	root, _ := disk.Open("")
	root.Sync() // now state.json's entry is durable too

	save("state.tmp", "v2")
	disk.Rename("state.tmp", "state.json") // no directory fsync after this

	fmt.Println(disk.Crash(faults.Fault{Kind: faults.Power}, nil))
	b, _ := afero.ReadFile(disk, "state.json")
	fmt.Printf("state.json = %s\n", b)
	// Output:
	// power lost: 0 file(s) back to their last fsync, 1 directory(ies) back to their last directory fsync
	// state.json = v1
}

func ExampleParseSchedule() {
	s, err := faults.ParseSchedule("kill@4, diskfull@12:4096")
	fmt.Println(s, err)
	_, err = faults.ParseSchedule("kill@4,powr@9")
	fmt.Println(err)
	// Output:
	// kill@4,diskfull@12:4096 <nil>
	// schedule "kill@4,powr@9", column 8: unknown fault kind "powr" (known: kill, power, torn, diskfull, fsyncfail, corrupt, lease, deploy, upgrade, switch, tool-transient, tool-ambiguous, tool-timeout, callback-dup, model-ratelimit, model-error, model-context, model-hang, model-cut, model-diverge)
}

// fillAt is an Injector that fills the disk at the third operation.
type fillAt struct{ n int }

func (f *fillAt) Inject(op faults.Op) *faults.Fault {
	f.n++
	if f.n == 3 {
		return &faults.Fault{Kind: faults.DiskFull, Bytes: 4} // less than a block: none fits
	}
	return nil
}

func ExampleNew() {
	fsys := faults.New(faults.NewDisk(faults.DiskOptions{}), &fillAt{})
	f, _ := fsys.OpenFile("wal.log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644) // op 1
	f.Write([]byte("rec1;"))                                                     // op 2
	// op 3: the disk fills; the rest of the file's first block still takes bytes, no more.
	n, err := f.Write(bytes.Repeat([]byte("r"), 5000))
	fmt.Println(n, err)
	// Output:
	// 4091 write wal.log: no space left on device
}

// The same program under the two persistence models: a new version written to a temporary file
// without an fsync and renamed over the old one, the directory fsynced. POSIX keeps the rename
// and not the data: a zero-length file. ext4 (auto_da_alloc) writes the data before the rename
// commits.
func ExampleFSModel() {
	for _, model := range faults.FSModels() {
		disk := faults.NewDisk(faults.DiskOptions{Model: model})
		old, _ := disk.Create("state.json")
		old.WriteString("v1")
		old.Sync()
		old.Close()
		f, _ := disk.Create("state.tmp")
		f.WriteString("v2") // no fsync
		f.Close()
		disk.Rename("state.tmp", "state.json")
		root, _ := disk.Open("")
		root.Sync()
		disk.Crash(faults.Fault{Kind: faults.Power}, nil)
		b, _ := afero.ReadFile(disk, "state.json")
		fmt.Printf("%s: state.json = %q\n", model, b)
	}
	// Output:
	// posix: state.json = ""
	// ext4-ordered: state.json = "v2"
}
