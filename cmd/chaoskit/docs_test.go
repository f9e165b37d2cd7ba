package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Every chaoskit command line the README and docs/*.md show names a command chaoskit has and
// flags that command takes, with values its flags parse. Each is run with --help appended
// (twice: a trailing flag without its value takes the first), which makes chaoskit parse the
// whole line and stop before doing anything: a line that exits other than 0 has an unknown
// command, an unknown flag, or a value its flag cannot parse.
//
// The lines checked are those of shell code blocks (```sh) where chaoskit is the command, and
// the inline `chaoskit ...` spans of the prose that are not templates (a span with a word in
// capitals, such as `--cases N`, or with "..." is a template). Shell variables stand for 1,
// ${VAR:-WORDS} and ${VAR:+WORDS} for their WORDS, and $(...) for 1.
func TestDocsCommandsParse(t *testing.T) {
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{"../../README.md"}, files...)
	checked := 0
	for _, file := range files {
		name, doc := readDoc(t, file)
		for _, c := range docCommands(doc) {
			checked++
			if slices.Contains(c.args, "--") {
				t.Errorf("%s:%d: %s\nhas a \"--\", after which --help would be an argument: this test cannot check it", name, c.line, c.text)
				continue
			}
			// Two: a flag left without its value at the end of the line takes the first.
			var stdout, stderr bytes.Buffer
			if code := run(append(slices.Clone(c.args[1:]), "--help", "--help"), &stdout, &stderr); code != exitOK {
				t.Errorf("%s:%d: %s\nchaoskit exits %d: %s", name, c.line, c.text, code, strings.TrimSpace(stderr.String()))
			}
		}
	}
	t.Logf("%d chaoskit command lines checked", checked)
	// The docs show some sixty chaoskit commands: far fewer means the extraction broke.
	if checked < 40 {
		t.Fatalf("found %d chaoskit command lines in README.md and docs/*.md, want 40 or more", checked)
	}
}

// docCommand is a chaoskit command line of a document: its words (args[0] names chaoskit),
// the line it starts on and its text.
type docCommand struct {
	args []string
	line int
	text string
}

var (
	fence      = regexp.MustCompile("(?m)^[ \\t]*```([a-z]*)\\n") // indented too, in a list
	inlineCode = regexp.MustCompile("`([^`\\n]+(?:\\n[^`\\n]+)*)`")
	template   = regexp.MustCompile(`^[A-Z][A-Z0-9_]*(\.\.\.)?$|\.\.\.|…`)
	assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
	varStart   = regexp.MustCompile(`^[A-Za-z_0-9*@#?]$`)
	varName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z_0-9]*`)

	// prefixWords are the words that may come before a command on its line.
	prefixWords = map[string]bool{"time": true, "/usr/bin/time": true, "exec": true, "env": true,
		"do": true, "then": true, "else": true, "!": true}
)

// docCommands returns the chaoskit command lines of a Markdown document: those of its sh code
// blocks, and its inline code spans that are commands, not templates.
func docCommands(doc string) []docCommand {
	var cmds []docCommand
	prose := []byte(doc) // doc with its code blocks blanked out, for the inline spans
	for pos := 0; ; {
		m := fence.FindStringSubmatchIndex(doc[pos:])
		if m == nil {
			break
		}
		start := pos + m[1]
		end := strings.Index(doc[start:], "```")
		if end < 0 {
			break
		}
		end += start
		for i := pos + m[0]; i < end+3; i++ {
			if prose[i] != '\n' {
				prose[i] = ' '
			}
		}
		if lang := doc[pos+m[2] : pos+m[3]]; lang == "sh" || lang == "bash" || lang == "shell" {
			line := strings.Count(doc[:start], "\n") + 1
			// A backslash at the end of a line continues the command on the next.
			physical := strings.Split(doc[start:end], "\n")
			for i := 0; i < len(physical); i++ {
				text, first := physical[i], line+i
				for strings.HasSuffix(text, "\\") && i+1 < len(physical) {
					i++
					text = strings.TrimSuffix(text, "\\") + " " + strings.TrimSpace(physical[i])
				}
				for _, args := range chaoskitCommands(text) {
					cmds = append(cmds, docCommand{args, first, strings.TrimSpace(text)})
				}
			}
		}
		pos = end + 3
	}
	for _, m := range inlineCode.FindAllSubmatchIndex(prose, -1) {
		text := strings.Join(strings.Fields(string(prose[m[2]:m[3]])), " ")
		for _, args := range chaoskitCommands(text) {
			if !isTemplate(args) {
				cmds = append(cmds, docCommand{args, bytes.Count(prose[:m[0]], []byte("\n")) + 1, text})
			}
		}
	}
	return cmds
}

// isTemplate reports whether a command has a placeholder for a word: NAME, DIR..., "...".
func isTemplate(args []string) bool {
	for _, a := range args {
		if template.MatchString(a) {
			return true
		}
	}
	return false
}

// chaoskitCommands splits a line of shell into its simple commands, as words, and returns those
// whose command is chaoskit (isChaoskit).
func chaoskitCommands(line string) [][]string {
	var out [][]string
	for _, words := range shellCommands(line) {
		// Skip what may come before the command itself: variable assignments, time and its
		// flags, and the keywords of a loop or a condition.
		for len(words) > 0 {
			w := words[0]
			if assignment.MatchString(w) || prefixWords[w] {
				words = words[1:]
				for w == "/usr/bin/time" && len(words) > 0 && strings.HasPrefix(words[0], "-") {
					words = words[1:]
				}
				continue
			}
			break
		}
		if len(words) > 1 && isChaoskit(words[0]) {
			out = append(out, words)
		}
	}
	return out
}

// isChaoskit reports whether a command is chaoskit: by its name, or by a path from / or ./
// (not cmd/chaoskit, the package).
func isChaoskit(cmd string) bool {
	return cmd == "chaoskit" || strings.HasSuffix(cmd, "/chaoskit") && (strings.HasPrefix(cmd, "/") || strings.HasPrefix(cmd, "./"))
}

// shellCommands splits a line of shell into simple commands, each a list of words, as sh
// would: quotes removed, a comment dropped, and the commands parted at ; & && | || ( ) and
// redirections. Variables are 1, ${VAR:-WORDS} and ${VAR:+WORDS} are WORDS, $(...) is 1.
func shellCommands(line string) [][]string {
	var cmds [][]string
	var words []string
	var word strings.Builder
	inWord := false
	endWord := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	endCommand := func() {
		endWord()
		if len(words) > 0 {
			cmds = append(cmds, words)
		}
		words = nil
	}
	in := []rune(line)
	var quote rune // 0, '\'' or '"'
	for i := 0; i < len(in); i++ {
		r := in[i]
		switch {
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				word.WriteRune(r)
			}
		case r == '\\' && i+1 < len(in):
			i++
			word.WriteRune(in[i])
			inWord = true
		case r == '$' && i+1 < len(in) && (in[i+1] == '{' || in[i+1] == '('):
			// ${...} or $(...): find the matching brace, then put what it stands for back into
			// the input, to be read in the quoting of the place it stands in.
			open, close := in[i+1], map[rune]rune{'{': '}', '(': ')'}[in[i+1]]
			depth, j := 0, i+1
			for ; j < len(in); j++ {
				if in[j] == open {
					depth++
				} else if in[j] == close {
					if depth--; depth == 0 {
						break
					}
				}
			}
			inner, with := string(in[min(i+2, len(in)):min(j, len(in))]), "1"
			if open == '{' {
				for _, op := range []string{":-", ":+", "-", "+"} {
					if _, alt, ok := strings.Cut(inner, op); ok {
						with = alt
						break
					}
				}
			}
			in = append([]rune(with), in[min(j+1, len(in)):]...)
			i = -1
			inWord = true
		case r == '$' && i+1 < len(in) && varStart.MatchString(string(in[i+1])):
			n := len([]rune(varName.FindString(string(in[i+1:])))) // $NAME, or $1, $*, $@ ...
			word.WriteString("1")
			inWord = true
			i += max(n, 1)
		case quote == '"':
			if r == '"' {
				quote = 0
			} else {
				word.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote = r
			inWord = true
		case r == '#' && !inWord:
			endCommand()
			return cmds
		case r == ' ' || r == '\t':
			endWord()
		case strings.ContainsRune(";&|()<>", r):
			endCommand()
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	endCommand()
	return cmds
}

// The extraction of commands from the docs, on the shapes they use.
func TestDocsCommandsExtraction(t *testing.T) {
	doc := "Run `chaoskit gate --gate 'duplicates==0' report`, or `chaoskit bench --random N`.\n\n" +
		"```sh\n" +
		"cd x && chaoskit run --exec 'python3 app.py' \\\n  --faults kill # a comment\n" +
		"/usr/bin/time -v chaoskit run --out \"/tmp/$(echo \"$name\" | tr / -)${MODEL:+-$MODEL}\" --fs-model \"${MODEL:-posix}\"\n" +
		"chaoskit gate ${BASELINE:+--baseline \"$BASELINE\"} --gate \"$GATE\" \"$REPORTS/merged\" || exit 1\n" +
		"go install ./cmd/chaoskit\n" +
		"```\n\n```\nchaoskit run --bogus\n```\n"
	var got []string
	for _, c := range docCommands(doc) {
		got = append(got, fmt.Sprintf("%d %q", c.line, c.args))
	}
	want := []string{
		`4 ["chaoskit" "run" "--exec" "python3 app.py" "--faults" "kill"]`,
		`6 ["chaoskit" "run" "--out" "/tmp/1-1" "--fs-model" "posix"]`,
		`7 ["chaoskit" "gate" "--baseline" "1" "--gate" "1" "1/merged"]`,
		`1 ["chaoskit" "gate" "--gate" "duplicates==0" "report"]`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Every relative link of the README and of the Markdown files under docs/ and adapters/ names
// a file or directory that exists and, for a link into a Markdown file with a #fragment, a
// heading of that file (by GitHub's rule: lower case, punctuation dropped, spaces as hyphens).
func TestDocsLinksResolve(t *testing.T) {
	files := []string{"../../README.md"}
	for _, dir := range []string{"../../docs", "../../adapters"} {
		filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.IsDir() && d.Name() == "node_modules":
				return filepath.SkipDir
			case !d.IsDir() && strings.HasSuffix(path, ".md"):
				files = append(files, path)
			}
			return nil
		})
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	checked := 0
	for _, file := range files {
		name, doc := readDoc(t, file)
		for _, m := range link.FindAllStringSubmatch(withoutCode(doc), -1) {
			target := m[1]
			if regexp.MustCompile(`^[a-z]+:`).MatchString(target) {
				continue // https:, mailto:
			}
			path, fragment, _ := strings.Cut(target, "#")
			if path == "" {
				path = filepath.Base(file)
			}
			path = filepath.Join(filepath.Dir(file), path)
			checked++
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link %s: %v", name, target, err)
				continue
			}
			if fragment != "" && strings.HasSuffix(path, ".md") {
				into, doc := readDoc(t, path)
				if anchors := headingAnchors(doc); !anchors[fragment] {
					t.Errorf("%s: link %s: %s has no heading whose anchor is #%s", name, target, into, fragment)
				}
			}
		}
	}
	if checked < 50 {
		t.Fatalf("found %d relative links, want 50 or more: the scan is broken", checked)
	}
}

// readDoc returns a document of the repository, by its path from the module's root, and its text.
func readDoc(t *testing.T, file string) (name, text string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(filepath.ToSlash(filepath.Clean(file)), "../../"), string(b)
}

// withoutCode returns a Markdown document without its code blocks and inline code, where a
// link is not a link.
func withoutCode(doc string) string {
	doc = regexp.MustCompile("(?s)```.*?```").ReplaceAllString(doc, "")
	return regexp.MustCompile("`[^`]*`").ReplaceAllString(doc, "")
}

// headingAnchors returns the anchors GitHub gives the headings of a Markdown document: the
// heading in lower case, without punctuation, spaces as hyphens, and -1, -2... for repeats.
func headingAnchors(doc string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`).FindAllStringSubmatch(regexp.MustCompile("(?s)```.*?```").ReplaceAllString(doc, ""), -1) {
		a := strings.ToLower(m[1])
		a = regexp.MustCompile(`[^\p{L}\p{N} _-]`).ReplaceAllString(a, "")
		a = strings.ReplaceAll(a, " ", "-")
		if n := seen[a]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}
