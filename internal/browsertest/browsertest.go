package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
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

// Do runs actions, failing t on an error; what names them.
func Do(ctx context.Context, t testing.TB, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Fill sets the value of the field sel as typing would (the review page
// reads values when a button is pressed).
func Fill(ctx context.Context, t testing.TB, sel, value string) {
	t.Helper()
	v, err := json.Marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	Do(ctx, t, "filling "+sel, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).value = %s`, sel, v)))
}

// Press clicks the button whose work reports in the element statusID,
// waits for the work to end (the button enabled again, a report that
// does not end with "…") and returns the report, and whether the page
// shows it as an error (class "error").
func Press(ctx context.Context, t testing.TB, button, statusID string) (msg string, isError bool) {
	t.Helper()
	Do(ctx, t, "pressing "+button,
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.getElementById(%q).textContent = ""`, statusID)),
		chromedp.Click(chromedp.CSS(button)),
		chromedp.Poll[chromedp.Void](fmt.Sprintf(`(() => { const s = document.getElementById(%q), b = document.querySelector(%q);
			return !b.disabled && s.textContent !== "" && !s.textContent.endsWith("…"); })()`, statusID, button),
			chromedp.WithPollingInterval(20*time.Millisecond)),
	)
	msg = Eval[string](ctx, t, fmt.Sprintf(`document.getElementById(%q).textContent`, statusID))
	return msg, Eval[string](ctx, t, fmt.Sprintf(`document.getElementById(%q).className`, statusID)) == "error"
}
