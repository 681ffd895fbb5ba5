// Package browsertest starts headless Chromium, through chromedp, for the
// tests that render fpdb's pages (the report, the server's review page).
//
// Without Chromium on $PATH a test is skipped, unless $FPDB_REQUIRE_BROWSER
// is 1 ("make test" sets it): then it fails. The browser runs with its own
// profile in a temporary directory, no sandbox (tests may run as root in a
// container), no GPU and no background network.
package browsertest
