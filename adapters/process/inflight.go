package process

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
)

// Bytes in flight on loopback. A TCP segment sent over loopback is not in its receiver's queue
// when send returns: the kernel queues it for the network's soft interrupt, which a loaded
// machine defers to ksoftirqd. In that window the sender has sent and waits (a client polling
// for its reply, with its socket's timeout), the receiver has nothing to read, and a quiescence
// check would see a command waiting and nothing owed, and move the clock past its timeout: the
// same run would take another path on a busier machine. The same holds for a connection whose
// handshake is under way, and for a reply on its way back. So a command is not quiescent while
// a TCP connection to a front door's port has bytes its peer has not taken in (its sender's
// unacknowledged bytes, with nothing waiting in its receiver's queue) or a handshake not done.

// tcpEnd is one TCP socket's line of /proc/net/tcp: its ends, state and queues.
type tcpEnd struct {
	local, remote string // address:port, in the file's hexadecimal
	lport, rport  int
	state         int
	txQueue       int64 // bytes sent and not acknowledged
	rxQueue       int64 // bytes received and not read
}

// TCP states of /proc/net/tcp (include/net/tcp_states.h).
const (
	tcpSynSent = 0x02
	tcpSynRecv = 0x03
	tcpListen  = 0x0a
)

// loopbackInFlight reports whether a TCP connection with an end on one of ports has a handshake
// under way or bytes on their way to a peer that has not taken them in.
func loopbackInFlight(ports map[int]bool) bool {
	if len(ports) == 0 {
		return false
	}
	var ends []tcpEnd
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		ends = append(ends, parseTCP(data, ports)...)
	}
	return inFlight(ends)
}

// inFlight applies the rule of loopbackInFlight to ends, the sockets with an end on a port.
func inFlight(ends []tcpEnd) bool {
	rx := map[[2]string]int64{} // the bytes each socket holds unread, by its local and remote ends
	for _, e := range ends {
		rx[[2]string{e.local, e.remote}] = e.rxQueue
	}
	for _, e := range ends {
		switch {
		case e.state == tcpListen:
		case e.state == tcpSynSent, e.state == tcpSynRecv:
			return true
		case e.txQueue > 0:
			// Unacknowledged: on its way, unless the peer's queue already holds bytes (then the
			// peer is readable, which the poll of its wait and the front door's unread bytes
			// see, or its window is full and these bytes wait for it to read).
			if peer, ok := rx[[2]string{e.remote, e.local}]; !ok || peer == 0 {
				return true
			}
		}
	}
	return false
}

// parseTCP returns the sockets of a /proc/net/tcp or tcp6 file that have an end on one of ports.
func parseTCP(data []byte, ports map[int]bool) []tcpEnd {
	var out []tcpEnd
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Scan() // the header
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 5 {
			continue
		}
		e := tcpEnd{local: string(f[1]), remote: string(f[2])}
		e.lport, e.rport = hexPort(f[1]), hexPort(f[2])
		if !ports[e.lport] && !ports[e.rport] {
			continue
		}
		st, err := strconv.ParseInt(string(f[3]), 16, 32)
		if err != nil {
			continue
		}
		e.state = int(st)
		tx, rx, ok := bytes.Cut(f[4], []byte(":"))
		if !ok {
			continue
		}
		e.txQueue, _ = strconv.ParseInt(string(tx), 16, 64)
		e.rxQueue, _ = strconv.ParseInt(string(rx), 16, 64)
		out = append(out, e)
	}
	return out
}

// hexPort returns the port of an address:port of /proc/net/tcp, or -1.
func hexPort(addr []byte) int {
	i := bytes.LastIndexByte(addr, ':')
	if i < 0 {
		return -1
	}
	p, err := strconv.ParseInt(string(addr[i+1:]), 16, 32)
	if err != nil {
		return -1
	}
	return int(p)
}
