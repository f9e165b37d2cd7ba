package process

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
)

// procTCP is /proc/net/tcp with the given lines after its header, each "local remote st tx rx".
func procTCP(lines ...string) []byte {
	out := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	for i, l := range lines {
		var local, remote, st string
		var tx, rx int
		fmt.Sscan(l, &local, &remote, &st, &tx, &rx)
		out += fmt.Sprintf("%4d: %s %s %s %08X:%08X 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0\n", i, local, remote, st, tx, rx)
	}
	return []byte(out)
}

// The rule: a handshake under way, or bytes a peer has not taken in, is in flight; a listener,
// an idle connection, bytes waiting unread in the peer's queue (readable, or a full window) and
// the connections of other ports are not.
func TestLoopbackInFlight(t *testing.T) {
	const door = "0100007F:1F90"                           // 127.0.0.1:8080, the front door's port
	const client, other = "0100007F:C350", "0100007F:0050" // a client's port, another server's
	ports := map[int]bool{8080: true}
	for _, tc := range []struct {
		name  string
		lines []string
		want  bool
	}{
		{"listener", []string{door + " 00000000:0000 0A 0 0"}, false},
		{"idle connection", []string{client + " " + door + " 01 0 0", door + " " + client + " 01 0 0"}, false},
		{"handshake sent", []string{client + " " + door + " 02 0 0"}, true},
		{"handshake received", []string{door + " " + client + " 03 0 0"}, true},
		{"request on its way", []string{client + " " + door + " 01 310 0", door + " " + client + " 01 0 0"}, true},
		{"request arrived, ack on its way", []string{client + " " + door + " 01 310 0", door + " " + client + " 01 0 310"}, false},
		{"reply on its way", []string{client + " " + door + " 01 0 0", door + " " + client + " 01 900 0"}, true},
		{"peer gone", []string{door + " " + client + " 04 1 0"}, true},
		{"another port", []string{client + " " + other + " 01 310 0", other + " " + client + " 02 0 0"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := inFlight(parseTCP(procTCP(tc.lines...), ports)); got != tc.want {
				t.Errorf("in flight = %v, want %v", got, tc.want)
			}
		})
	}
}

// On this machine's own /proc/net/tcp: a connection to a listener, once both ends are idle, is
// not in flight; and the listener's port is found in the file.
func TestLoopbackInFlightReadsProc(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	if _, err := s.Read(b); err != nil { // the bytes arrived: acknowledged or about to be
		t.Fatal(err)
	}
	ports := map[int]bool{port: true}
	// The acknowledgement may still be on its way: it is in flight until it lands (a read takes
	// some 2 ms, so a thousand tries wait some 2 s, and never for ever).
	for i := 0; loopbackInFlight(ports); i++ {
		if i == 1000 {
			t.Fatal("an idle connection is still in flight")
		}
	}
	data, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	if ends := parseTCP(data, ports); len(ends) < 3 { // the listener and both ends
		t.Errorf("found %d sockets on port %d in /proc/net/tcp, want the listener and both ends", len(ends), port)
	}
}

// A response is owed until the server has written all of it: after the handler has returned
// (net/http writes a chunked body's end then), until the connection goes idle.
func TestResponseOwedUntilWritten(t *testing.T) {
	door := NewFrontDoor()
	defer door.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	idle := make(chan [2]int, 1) // what is owed when the server says the connection is idle, and after
	srv := &http.Server{
		Handler: door.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "part of it")
			w.(http.Flusher).Flush() // chunked: its end is written after the handler returns
		})),
		ConnState: func(c net.Conn, s http.ConnState) {
			before, _ := door.l.owed()
			door.ConnState(c, s)
			after, _ := door.l.owed()
			if s == http.StateIdle {
				idle <- [2]int{before, after}
			}
		},
	}
	go srv.Serve(door.Listener(ln))
	defer srv.Close()
	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "part of it" || len(resp.TransferEncoding) == 0 {
		t.Fatalf("got %q, transfer encoding %v; want a chunked body", body, resp.TransferEncoding)
	}
	if owed := <-idle; owed[0] == 0 || owed[1] != 0 {
		t.Errorf("owed when the server went idle: %d before ConnState, %d after; want owed until then, then not", owed[0], owed[1])
	}
}

// BenchmarkLoopbackInFlight is the cost of one look at /proc/net/tcp and tcp6, which is why a
// command looks only while a front door may have something on its way (doorsInFlight):
// go test -run XXX -bench LoopbackInFlight ./adapters/process
func BenchmarkLoopbackInFlight(b *testing.B) {
	ports := map[int]bool{8080: true}
	for b.Loop() {
		loopbackInFlight(ports)
	}
}
