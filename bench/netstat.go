package main

import (
	"bufio"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// The kernel's TCP counters that tell who reset a connection, read before
// and after each in-flight level (issue 38: 50 of 10,000 calls over h2c
// were reset once, and never since). They count for the whole network
// namespace: other sessions' sockets on this machine count too, so a
// non-zero delta says what happened near the level, not that the level
// did it.
var tcpCounters = []struct{ file, proto, name string }{
	// The accept queue of a listener overflowed (the handshake's last
	// ACK dropped) or a SYN was dropped.
	{"/proc/net/netstat", "TcpExt:", "ListenOverflows"},
	{"/proc/net/netstat", "TcpExt:", "ListenDrops"},
	{"/proc/net/netstat", "TcpExt:", "TCPReqQFullDrop"},
	{"/proc/net/netstat", "TcpExt:", "TCPBacklogDrop"},
	// Resets this host sent: a socket closed with unread data (OnClose),
	// data arriving after close (OnData), out of memory for orphaned
	// sockets (OnMemory), a timeout (OnTimeout).
	{"/proc/net/netstat", "TcpExt:", "TCPAbortOnClose"},
	{"/proc/net/netstat", "TcpExt:", "TCPAbortOnData"},
	{"/proc/net/netstat", "TcpExt:", "TCPAbortOnMemory"},
	{"/proc/net/netstat", "TcpExt:", "TCPAbortOnTimeout"},
	// Every reset sent, and established connections reset.
	{"/proc/net/snmp", "Tcp:", "OutRsts"},
	{"/proc/net/snmp", "Tcp:", "EstabResets"},
}

// readTCPCounters returns tcpCounters' values now (missing ones absent).
func readTCPCounters() map[string]int64 {
	out := map[string]int64{}
	for _, file := range []string{"/proc/net/netstat", "/proc/net/snmp"} {
		tables := readSNMPFile(file)
		for _, c := range tcpCounters {
			if c.file != file {
				continue
			}
			if v, ok := tables[c.proto][c.name]; ok {
				out[c.name] = v
			}
		}
	}
	return out
}

// readSNMPFile parses /proc/net/netstat or /proc/net/snmp: pairs of lines,
// "Proto: names…" then "Proto: values…".
func readSNMPFile(path string) map[string]map[string]int64 {
	out := map[string]map[string]int64{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var names []string
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		if names == nil || names[0] != fields[0] {
			names = fields
			continue
		}
		row := map[string]int64{}
		for i := 1; i < len(fields) && i < len(names); i++ {
			if v, err := strconv.ParseInt(fields[i], 10, 64); err == nil {
				row[names[i]] = v
			}
		}
		out[fields[0]] = row
		names = nil
	}
	return out
}

// tcpCountersDelta is after − before for every counter, in tcpCounters'
// order, as "name +n" (every counter, zero or not: a zero is a finding).
func tcpCountersDelta(before, after map[string]int64) string {
	var parts []string
	for _, c := range tcpCounters {
		a, ok := after[c.name]
		if !ok {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s +%d", c.name, a-before[c.name]))
	}
	if len(parts) == 0 {
		return "(not readable)"
	}
	return strings.Join(parts, ", ")
}

// listenQueue returns the accept queue of the listening TCP socket on
// port: the connections the kernel completed and the process has not
// accepted yet; ok false when /proc/net/tcp{,6} shows no listener on
// port. (For a listener, rx_queue is that queue's length; its bound is
// not in the file: see somaxconn.)
func listenQueue(port int) (queued int, ok bool) {
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st tx_queue:rx_queue …
			fields := strings.Fields(sc.Text())
			if len(fields) < 5 || fields[3] != "0A" { // 0A: LISTEN
				continue
			}
			i := strings.LastIndexByte(fields[1], ':')
			p, err := strconv.ParseInt(fields[1][i+1:], 16, 32)
			if err != nil || int(p) != port {
				continue
			}
			_, rx, _ := strings.Cut(fields[4], ":")
			if q, err := strconv.ParseInt(rx, 16, 64); err == nil {
				f.Close()
				return int(q), true
			}
		}
		f.Close()
	}
	return 0, false
}

// somaxconn is the bound of a Go listener's accept queue: Go listens with
// the backlog net.core.somaxconn gives (0 when unreadable).
func somaxconn() int {
	b, err := os.ReadFile("/proc/sys/net/core/somaxconn")
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// urlPort is the port of rawURL, 0 if it has none.
func urlPort(rawURL string) int {
	u, err := url.Parse(rawURL)
	if err != nil {
		return 0
	}
	p, _ := strconv.Atoi(u.Port())
	return p
}
