package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Environment variables the browser tests read.
const (
	// EnvRequire, set to 1, makes a missing Chromium a failure.
	EnvRequire = "FPDB_REQUIRE_BROWSER"
	// EnvUpdateScreenshot, set to 1, asks the tests to rewrite their
	// screenshots under docs/.
	EnvUpdateScreenshot = "FPDB_UPDATE_SCREENSHOT"
)

// chromium returns the path of a Chromium binary, or skips t (fails it,
// when one is required); missed says what is then not tried.
func chromium(t testing.TB, missed string) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv(EnvRequire) == "1" {
		t.Fatalf("no chromium on $PATH and $%s=1: install it (apt-get install chromium, or make test-deps)", EnvRequire)
	}
	t.Skipf("no chromium on $PATH: %s (apt-get install chromium; $%s=1 makes this a failure)", missed, EnvRequire)
	return ""
}

// Start starts headless Chromium with a window of width×height pixels and
// returns a chromedp context to run actions in, which ends after timeout
// or with the test. Without Chromium it skips t (see the package doc);
// missed says what is then not tried ("the report is not rendered in a
// browser").
func Start(t testing.TB, missed string, width, height int, timeout time.Duration) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t, missed)),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelBrowser := chromedp.NewContext(ctx)
	t.Cleanup(cancelBrowser)
	return ctx
}

// Eval returns the value of a JavaScript expression in the page, failing
// t on an error.
func Eval[T any](ctx context.Context, t testing.TB, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}
