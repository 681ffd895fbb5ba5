package bench

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Env describes where and how a run was made.
type Env struct {
	CPU       string `json:"cpu"`
	Cores     int    `json:"cores"`
	MemTotal  string `json:"mem_total"`
	GoVersion string `json:"go_version"`
	GOARCH    string `json:"goarch"`
	GOAMD64   string `json:"goamd64,omitempty"`
	Commit    string `json:"commit"`
	// Dirty lists the files that differed from Commit when the run started
	// (others work in the same tree).
	Dirty   []string  `json:"dirty,omitempty"`
	Command string    `json:"command"`
	Date    time.Time `json:"date"`
}

// CollectEnv describes this machine, toolchain and working tree.
func CollectEnv(command string) Env {
	e := Env{
		CPU:       cpuModel(),
		Cores:     runtime.NumCPU(),
		MemTotal:  procField("/proc/meminfo", "MemTotal"),
		GoVersion: runtime.Version(),
		GOARCH:    runtime.GOARCH,
		GOAMD64:   os.Getenv("GOAMD64"),
		Command:   command,
		Date:      time.Now().UTC().Truncate(time.Second),
	}
	if out, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
		e.Commit = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil {
		for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
			if len(line) > 3 {
				e.Dirty = append(e.Dirty, strings.TrimSpace(line[3:]))
			}
		}
	}
	return e
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func procField(path, name string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == name {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// PeakRSS returns the peak resident set size of this process in bytes
// (VmHWM of /proc/self/status), or 0 when unknown.
func PeakRSS() int64 { return procKB("VmHWM") }

// procKB returns field name of /proc/self/status (a size in kB) in bytes,
// or 0 when unknown.
func procKB(name string) int64 {
	f := strings.Fields(procField("/proc/self/status", name))
	if len(f) < 1 {
		return 0
	}
	kb, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0
	}
	return kb << 10
}
