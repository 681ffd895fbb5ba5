package server

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/server/apiconv"
	"github.com/fpdb/fpdb/server/httpapi"
)

// templates is GET /v1/templates.
func (s *Server) templates(w http.ResponseWriter, r *http.Request) error {
	ts, err := s.d.Templates(r.Context())
	if err != nil {
		return err
	}
	out := api.Templates{Templates: make([]api.Template, len(ts))}
	for i, t := range ts {
		out.Templates[i] = apiconv.Template(t)
	}
	return httpapi.WriteJSON(w, http.StatusOK, out)
}

// templateResult returns the API form of res.
func templateResult(res *db.TemplateResult) api.TemplateResult {
	return api.TemplateResult{Template: apiconv.Template(res.Template), Replaced: res.Replaced, Documents: res.Documents,
		Changed: res.Changed, Excluded: res.Excluded}
}

// addTemplate is POST /v1/templates: add a template, or replace the one
// of that name (201 when new, 200 when replaced). The stored documents
// are fingerprinted again meanwhile; writers wait.
func (s *Server) addTemplate(w http.ResponseWriter, r *http.Request) error {
	var req api.TemplateRequest
	if err := httpapi.ReadJSON(r, &req); err != nil {
		return err
	}
	if req.Name == "" {
		return httpapi.BadRequest("the template needs a name")
	}
	to, err := httpapi.TextOptions(req.TextInput)
	if err != nil {
		return err
	}
	res, err := s.d.AddTemplate(r.Context(), req.Name, []byte(req.Text), to)
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if res.Replaced {
		status = http.StatusOK
	}
	return httpapi.WriteJSON(w, status, templateResult(res))
}

// removeTemplate is DELETE /v1/templates/{name}: the answer describes the
// template removed, as GET /v1/templates listed it.
func (s *Server) removeTemplate(w http.ResponseWriter, r *http.Request) error {
	res, err := s.d.RemoveTemplate(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	return httpapi.WriteJSON(w, http.StatusOK, templateResult(res))
}

// backup is POST /v1/backup: a consistent copy of the database into dir, a
// path on the server's machine (absolute, not existing, outside the
// database; inside Options.BackupRoot when it is set, and then relative
// to it when relative), as "fpdb backup" makes it; reads and writes go on
// meanwhile.
func (s *Server) backup(w http.ResponseWriter, r *http.Request) error {
	var req api.BackupRequest
	if err := httpapi.ReadJSON(r, &req); err != nil {
		return err
	}
	dir, answer, err := s.backupDest(r, req.Dir)
	if err != nil {
		return err
	}
	// Checked before any parent is made: through a symbolic link, a
	// parent could be made inside the database.
	if s.d.InsideDir(dir) {
		return httpapi.BadRequest("dir %q is inside the database's directory", req.Dir)
	}
	// A parent the server cannot make is the request's fault (a path that
	// cannot be a directory here), not the database's.
	made, err := mkdirParents(dir)
	if err != nil {
		return httpapi.BadRequest("dir %q: %v", req.Dir, err)
	}
	// A dir that cannot be made here (a name too long) is the request's
	// fault too, and so is one that exists, whatever it is: a directory,
	// a file, a symbolic link (even one to nothing, which the copy's
	// final rename would fail on, a 500).
	switch fi, err := os.Lstat(dir); {
	case err == nil:
		removeMade(made)
		return httpapi.BadRequest("dir %q exists (%s): the destination must not exist", req.Dir, fileKind(fi.Mode()))
	case !errors.Is(err, fs.ErrNotExist):
		removeMade(made)
		return httpapi.BadRequest("dir %q: %v", req.Dir, err)
	}
	start := time.Now()
	res, err := s.d.Backup(r.Context(), dir)
	if err != nil {
		removeMade(made)
		if errors.Is(err, fs.ErrExist) || dirRefused(err, dir) {
			return httpapi.BadRequest("%v", err)
		}
		return fmt.Errorf("backup: %w", err)
	}
	return httpapi.WriteJSON(w, http.StatusOK, api.BackupResult{Dir: answer, Docs: res.Docs, Seconds: time.Since(start).Seconds()})
}

// backupDest returns where a backup into dir goes (the request r's), and
// the path the answer names, cleaned (".." applied by the text, as the
// backup goes there): a 400 for a path that cannot be one (no absolute
// path without a backup root, a NUL byte), a 403 for one outside the
// backup root, reached through a symbolic link or "..".
//
// With a backup root the backup goes to the destination resolved (its
// symbolic links followed), which is what was found inside the root, not
// to the path named, which the backup would walk again: a link changed
// meanwhile could take it elsewhere. That narrows the race, it does not
// close it: a local user who may change the directories under the root
// while a backup runs can still redirect it (fpdb serve --backup-root
// says so). The 403 does not name the root, which is the server's
// business: its log line does.
func (s *Server) backupDest(r *http.Request, dir string) (to, answer string, err error) {
	root := s.o.BackupRoot
	switch {
	case strings.ContainsRune(dir, 0):
		return "", "", httpapi.BadRequest("dir %q contains a NUL byte", dir)
	case root == "" && !filepath.IsAbs(dir):
		return "", "", httpapi.BadRequest("dir %q: want an absolute path (on the server's machine)", dir)
	case dir == "":
		return "", "", httpapi.BadRequest("dir %q: want a path inside the server's backup root (on the server's machine; a relative one is taken inside it)", dir)
	case root == "":
		clean := filepath.Clean(dir)
		return clean, clean, nil
	}
	clean := dir
	if !filepath.IsAbs(clean) {
		clean = filepath.Join(root, clean)
	}
	clean = filepath.Clean(clean)
	rr, err := resolveNew(root)
	if err != nil {
		return "", "", fmt.Errorf("backup root %s: %w", root, err) // a 500: the server's own directory
	}
	d, err := resolveNew(clean)
	if err != nil {
		return "", "", httpapi.BadRequest("dir %q: %v", dir, err)
	}
	if rel, err := filepath.Rel(rr, d); err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		s.o.Logger.Warn("backup refused: the destination is outside the backup root", "request_id", httpapi.RequestID(r.Context()),
			"dir", dir, "resolved", d, "backup_root", root)
		return "", "", &httpapi.Error{Status: http.StatusForbidden, Code: api.CodeForbidden,
			Message: fmt.Sprintf("dir %q is outside the server's backup root, where this server writes backups (fpdb serve --backup-root)", dir)}
	}
	return d, clean, nil
}

// checkBackupRoot returns the absolute path of root, which must be a
// directory (Options.BackupRoot).
func checkBackupRoot(root string) (string, error) {
	if strings.ContainsRune(root, 0) {
		return "", fmt.Errorf("%q contains a NUL byte", root)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", abs)
	}
	return abs, nil
}

// resolveNew returns the path the operating system reaches by path, an
// absolute path without ".." (filepath.Clean's), which need not exist:
// the longest prefix of it that exists with its symbolic links resolved
// (filepath.EvalSymlinks), and the rest, which names nothing yet and so
// holds no link. A prefix that cannot be resolved for another reason
// than not existing (no permission, a file where a directory should be,
// a loop of links, a link to nothing) is the error.
func resolveNew(path string) (string, error) {
	rest := ""
	for p := path; ; {
		r, err := filepath.EvalSymlinks(p)
		switch {
		case err == nil:
			return filepath.Join(r, rest), nil
		case !errors.Is(err, fs.ErrNotExist):
			return "", err
		}
		if _, lerr := os.Lstat(p); lerr == nil {
			return "", fmt.Errorf("%s is a symbolic link to nothing", p)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return "", err
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// fileKind names in words the kind of file of mode m.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsRegular():
		return "a file"
	}
	return "a special file"
}

// dirRefused reports whether err is the file system refusing the backup
// directory itself (or a directory above it, or the one beside it the
// copy is made in first) — no permission, a read-only file system, a
// place where no directory can be made, such as /proc: the request's
// fault, where a failure to write inside it (a full disk) is the
// server's.
func dirRefused(err error, dir string) bool {
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "mkdir" {
		return false
	}
	if p := pe.Path; p != dir && !strings.HasPrefix(dir, p+string(filepath.Separator)) && filepath.Dir(p) != filepath.Dir(dir) {
		return false
	}
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.ENOTDIR)
}

// mkdirParents makes the missing parents of dir and returns those it made,
// deepest first, so that a failed backup can remove them again. When it
// fails (a parent is a file, a name is too long), it removes what it made.
func mkdirParents(dir string) ([]string, error) {
	var missing []string // the parents that cannot be read, up to the first that exists
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); err == nil {
			break
		}
		missing = append(missing, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		removeMade(missing)
		return nil, err
	}
	return missing, nil
}

// removeMade removes the directories mkdirParents made (deepest first),
// each only while it is empty (one MkdirAll could not make fails to go).
func removeMade(made []string) {
	for _, p := range made {
		_ = os.Remove(p)
	}
}
