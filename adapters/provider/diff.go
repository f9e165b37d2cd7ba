package provider

import (
	"fmt"
	"strings"
)

// diffLines is a line diff of old against new: lines only in old start with "-", only in new
// with "+", shared ones with "  "; runs of shared lines further than context from a change are
// left out, marked "  …". It returns the diff and how many lines differ. At most limit lines
// are written, then a line saying how many more there are.
func diffLines(old, new []string, context, limit int) (string, int) {
	// lcs[i][j] is the longest common subsequence of old[i:] and new[j:].
	lcs := make([][]int, len(old)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(new)+1)
	}
	for i := len(old) - 1; i >= 0; i-- {
		for j := len(new) - 1; j >= 0; j-- {
			if old[i] == new[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op   byte
		text string
	}
	var ops []line
	i, j := 0, 0
	for i < len(old) || j < len(new) {
		switch {
		case i < len(old) && j < len(new) && old[i] == new[j]:
			ops = append(ops, line{' ', old[i]})
			i, j = i+1, j+1
		case i < len(old) && (j == len(new) || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, line{'-', old[i]})
			i++
		default:
			ops = append(ops, line{'+', new[j]})
			j++
		}
	}
	changed := 0
	near := make([]bool, len(ops))
	for k, op := range ops {
		if op.op == ' ' {
			continue
		}
		changed++
		for d := max(0, k-context); d <= min(len(ops)-1, k+context); d++ {
			near[d] = true
		}
	}
	var b strings.Builder
	written, skipped := 0, false
	for k, op := range ops {
		if !near[k] {
			skipped = true
			continue
		}
		if written == limit {
			fmt.Fprintf(&b, "  … (%d more lines of diff)\n", len(ops)-k)
			break
		}
		if skipped {
			b.WriteString("  …\n")
			skipped = false
		}
		fmt.Fprintf(&b, "%c %s\n", op.op, op.text)
		written++
	}
	return b.String(), changed
}
