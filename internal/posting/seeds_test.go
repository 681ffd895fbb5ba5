package posting

import (
	"flag"
	"os"
	"path/filepath"
)

var writeSeeds = flag.Bool("write-seeds", false, "regenerate the fuzz seed corpus in testdata")

func writeFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), 0o644)
}
