package registry

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"
	"github.com/itchyny/gojq"
)

// position is a place in an operator's file.
type position struct {
	file      string
	line, col int
}

func (p position) String() string { return fmt.Sprintf("%s:%d:%d", p.file, p.line, p.col) }

// posOf is the position of a CUE value, preferring where an operator's
// file declares it over the schema's default or constraint; ok=false when
// it has none.
func posOf(v cue.Value) (position, bool) {
	p := v.Pos()
	if p.IsValid() && strings.HasPrefix(p.Filename(), "schemas/") {
		_, parts := v.Expr()
		for _, c := range parts {
			if cp := c.Pos(); cp.IsValid() && !strings.HasPrefix(cp.Filename(), "schemas/") {
				p = cp
				break
			}
		}
	}
	if !p.IsValid() {
		return position{}, false
	}
	return position{p.Filename(), p.Line(), p.Column()}, true
}

// programErrf reports an error of the jq program declared at v. A jq
// syntax error says where in the program it is and is placed at that
// token inside the operator's CUE file, when a string literal of the
// field's expression holds it (a program may be concatenated from
// several, a shared prelude first); otherwise at the field.
func (c *compiler) programErrf(v cue.Value, src string, err error, format string, args ...any) {
	msg := fmt.Sprintf(format, args...) + ": " + err.Error()
	var pe *gojq.ParseError
	if errors.As(err, &pe) {
		off := max(0, min(len(src), pe.Offset-len(pe.Token)))
		line, col := lineCol(src, off)
		msg += fmt.Sprintf(" (line %d, column %d of the program)", line, col)
		if at, found := c.tokenPos(v, src, off); found {
			c.problems = append(c.problems, at.String()+": "+msg)
			return
		}
	}
	// An unknown function or variable is found at compile time, with no
	// offset: point at the word itself.
	if m := undefinedRE.FindStringSubmatch(err.Error()); m != nil {
		if off := wordOffset(src, m[1]); off >= 0 {
			if at, found := c.tokenPos(v, src, off); found {
				c.problems = append(c.problems, at.String()+": "+msg)
				return
			}
		}
	}
	c.errf(v, "%s", msg)
}

// undefinedRE reads the word out of gojq's "function not defined: f/1" and
// "variable not defined: $x".
var undefinedRE = regexp.MustCompile(`(?:function|variable) not defined: (\$?[A-Za-z_][A-Za-z0-9_]*)`)

// tokenPos finds byte off of the program src in the string literals of
// v's declarations in the operator's files.
func (c *compiler) tokenPos(v cue.Value, src string, off int) (position, bool) {
	nodes := []ast.Node{v.Source()}
	_, parts := v.Expr()
	for _, p := range parts {
		nodes = append(nodes, p.Source())
	}
	var found position
	ok := false
	for _, n := range nodes {
		if n == nil || ok {
			continue
		}
		ast.Walk(n, func(x ast.Node) bool {
			lit, isLit := x.(*ast.BasicLit)
			if ok || !isLit || lit.Kind != token.STRING {
				return !ok
			}
			p := lit.Pos()
			file := c.files[p.Filename()]
			decoded, positions, dok := decodeLiteral(file, p.Offset())
			if !dok || len(decoded) == 0 {
				return true
			}
			idx := strings.Index(src, decoded)
			if idx < 0 || strings.Contains(src[idx+1:], decoded) || off < idx || off > idx+len(decoded) {
				return true // not in this literal, or ambiguous
			}
			at := p.Offset()
			if k := off - idx; k < len(positions) {
				at = positions[k]
			} else if len(positions) > 0 {
				at = positions[len(positions)-1] + 1
			}
			line, col := lineCol(string(file), at)
			found, ok = position{p.Filename(), line, col}, true
			return false
		}, nil)
	}
	return found, ok
}

// lineCol is the 1-based line and column of byte offset off in s.
func lineCol(s string, off int) (line, col int) {
	line, col = 1, 1
	for i := 0; i < off && i < len(s); i++ {
		if s[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// literalPos finds, in file (a CUE source), the position of byte off of
// the string literal starting at byte start, provided the literal's value
// is want.
func literalPos(file []byte, start int, want string, off int) (position, bool) {
	decoded, positions, ok := decodeLiteral(file, start)
	if !ok || decoded != want || off > len(positions) {
		return position{}, false
	}
	at := start
	if off < len(positions) {
		at = positions[off]
	} else if len(positions) > 0 {
		at = positions[len(positions)-1] + 1
	}
	line, col := lineCol(string(file), at)
	return position{line: line, col: col}, true
}

// decodeLiteral reads the CUE string literal starting at byte start of
// file: a single-line "…" (escapes decoded) or a multi-line """…"""
// (indentation of the closing quotes removed), with or without #. It
// returns the value and, for each of its bytes, its offset in file.
func decodeLiteral(file []byte, start int) (string, []int, bool) {
	if start < 0 || start >= len(file) {
		return "", nil, false
	}
	i := start
	hashes := 0
	for i < len(file) && file[i] == '#' {
		hashes++
		i++
	}
	multi := i+2 < len(file) && string(file[i:i+3]) == `"""`
	if !multi && (i >= len(file) || file[i] != '"') {
		return "", nil, false
	}
	// positions[k] is the file offset of decoded byte k.
	var decoded []byte
	var positions []int
	if multi {
		i += 3
		for i < len(file) && file[i] != '\n' {
			i++
		}
		i++ // the first content line
		end := indexFrom(file, i, `"""`)
		if end < 0 {
			return "", nil, false
		}
		ls := end
		for ls > 0 && (file[ls-1] == ' ' || file[ls-1] == '\t') {
			ls--
		}
		indent := end - ls
		body := i
		for j := body; j < ls; {
			lineEnd := indexFrom(file, j, "\n")
			if lineEnd < 0 || lineEnd >= ls {
				lineEnd = ls - 1 // the newline before the closing quotes
			}
			k := j
			for n := 0; n < indent && k < lineEnd && (file[k] == ' ' || file[k] == '\t'); n++ {
				k++
			}
			for ; k < lineEnd; k++ {
				decoded = append(decoded, file[k])
				positions = append(positions, k)
			}
			if lineEnd < ls-1 {
				decoded = append(decoded, '\n')
				positions = append(positions, lineEnd)
			}
			j = lineEnd + 1
		}
	} else {
		i++
		for i < len(file) && file[i] != '"' && file[i] != '\n' {
			at := i
			if file[i] == '\\' && hashes == 0 && i+1 < len(file) {
				i++
				switch file[i] {
				case 'n':
					decoded = append(decoded, '\n')
				case 't':
					decoded = append(decoded, '\t')
				default:
					decoded = append(decoded, file[i])
				}
			} else {
				decoded = append(decoded, file[i])
			}
			positions = append(positions, at)
			i++
		}
	}
	return string(decoded), positions, true
}

func indexFrom(b []byte, from int, sub string) int {
	for j := from; j+len(sub) <= len(b); j++ {
		if string(b[j:j+len(sub)]) == sub {
			return j
		}
	}
	return -1
}
