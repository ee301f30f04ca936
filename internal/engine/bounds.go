package engine

import (
	"errors"
	"fmt"
	"strings"

	"github.com/Masterminds/sprig/v3"
)

// Bounds on the functions whose output size a template chooses with a
// number: without them one template could allocate gigabytes before the
// output limit (maxRendered) is reached, and the controller renders
// every tenant's templates.

// maxListLen bounds the lists until, untilStep and seq make.
const maxListLen = 1 << 16

var sprigFuncs = sprig.HermeticTxtFuncMap()

// boundedFuncs replace sprig's functions of the same name.
func boundedFuncs() map[string]any {
	untilStep := sprigFuncs["untilStep"].(func(int, int, int) []int)
	seq := sprigFuncs["seq"].(func(...int) string)
	return map[string]any{
		"repeat": func(count int, s string) (string, error) {
			if count < 0 || (len(s) > 0 && count > maxRendered/len(s)) {
				return "", fmt.Errorf("repeat: the result would be larger than %d bytes", maxRendered)
			}
			return strings.Repeat(s, count), nil
		},
		"until": func(count int) ([]int, error) {
			if err := checkSpan("until", 0, count); err != nil {
				return nil, err
			}
			step := 1
			if count < 0 {
				step = -1
			}
			return untilStep(0, count, step), nil
		},
		"untilStep": func(start, stop, step int) ([]int, error) {
			if err := checkSpan("untilStep", start, stop); err != nil {
				return nil, err
			}
			return untilStep(start, stop, step), nil
		},
		"seq": func(params ...int) (string, error) {
			for _, p := range params {
				if err := checkSpan("seq", 0, p); err != nil {
					return "", err
				}
			}
			return seq(params...), nil
		},
	}
}

// checkSpan refuses a range whose ends are beyond ±maxListLen.
func checkSpan(fn string, start, stop int) error {
	if start < -maxListLen || start > maxListLen || stop < -maxListLen || stop > maxListLen {
		return fmt.Errorf("%s: numbers beyond ±%d are refused (the list would be too long)", fn, maxListLen)
	}
	return nil
}

// indent pads every line of s with n spaces.
func indent(n int, s string) (string, error) {
	if n < 0 || n > maxRendered || (strings.Count(s, "\n")+1)*n+len(s) > maxRendered {
		return "", errors.New("indent: the result would be larger than the output limit")
	}
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(s, "\n", "\n"+pad), nil
}
