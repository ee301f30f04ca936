package clusterfanout

import (
	"encoding/json"
	"reflect"
)

// covers tells whether every field that want sets holds the same value in
// got, as JSON: got may have more (the API server's defaults), but a
// field edited by hand on a stamp differs. A field that want leaves at
// its zero value (null, "", 0, false) counts as unset, since the API
// server may default it. Lists must have the same length, their items
// compared the same way.
func covers(want, got any) bool {
	w, errW := asJSON(want)
	g, errG := asJSON(got)
	if errW != nil || errG != nil {
		return false
	}
	return coversValue(w, g)
}

func asJSON(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(b, &out)
}

func coversValue(want, got any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			gv, found := g[k]
			if !found || !coversValue(wv, gv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !coversValue(w[i], g[i]) {
				return false
			}
		}
		return true
	default:
		if want == nil || want == "" || want == float64(0) || want == false {
			return true
		}
		return reflect.DeepEqual(want, got)
	}
}
