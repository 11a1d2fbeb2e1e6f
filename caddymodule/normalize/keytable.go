package normalize

import "math/bits"

// keyTable finds the slot of a site's key while an object is indexed
// (pushFrame looks up every member's key of every indexed object): open
// addressing on a hash of the key's length and three of its bytes, where
// a Go map hashes every byte of every key (issue 38: the map was 4 % of a
// normalize of the bench item).
type keyTable struct {
	shift uint8    // 32 - log2(len(slots))
	slots []int32  // slot+1 of the key hashed there; 0: empty
	keys  []string // by slot
}

func newKeyTable(keys map[string]int) *keyTable {
	size := 8
	for size < 2*len(keys) {
		size *= 2
	}
	t := &keyTable{shift: uint8(32 - bits.TrailingZeros(uint(size))), slots: make([]int32, size), keys: make([]string, len(keys))}
	mask := uint32(size - 1)
	for k, slot := range keys {
		t.keys[slot] = k
		i := keyHash(k) >> t.shift
		for t.slots[i] != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = int32(slot + 1)
	}
	return t
}

func keyHash(k string) uint32 {
	h := uint32(len(k))
	if n := len(k); n > 0 {
		h ^= uint32(k[0]) | uint32(k[n/2])<<8 | uint32(k[n-1])<<16
	}
	return h * 0x9E3779B1
}

// find is key's slot.
func (t *keyTable) find(key string) (int, bool) {
	mask := uint32(len(t.slots) - 1)
	for i := keyHash(key) >> t.shift; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			return 0, false
		}
		if t.keys[s-1] == key {
			return int(s - 1), true
		}
	}
}
