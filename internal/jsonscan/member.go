package jsonscan

import "unsafe"

// Member is where one member of an object lies, as byte offsets from the
// object's opening brace: its key's body (between the quotes) and its
// value. A reader that has checked an object (Checker.Object's member
// callback) hands these on, so that the next reader of the object (the
// normalizer's plan) finds its members without a pass of its own.
type Member struct{ KeyStart, KeyEnd, ValueStart, ValueEnd int32 }

// MemberAt locates the member (key, value), as Checker.Object's member
// callback is given it, in obj, the text from the object's opening brace
// on. ok is false when key is not a view of obj's text (it held an
// escape, so it was decoded into a string of its own, or it is empty):
// its offsets cannot be told.
func MemberAt(obj, key, value string) (Member, bool) {
	if key == "" || value == "" || len(obj) > 1<<31-1 {
		return Member{}, false
	}
	base := uintptr(unsafe.Pointer(unsafe.StringData(obj)))
	ks := uintptr(unsafe.Pointer(unsafe.StringData(key))) - base
	vs := uintptr(unsafe.Pointer(unsafe.StringData(value))) - base
	n := uintptr(len(obj))
	if ks >= n || n-ks < uintptr(len(key)) || vs >= n || n-vs < uintptr(len(value)) {
		return Member{}, false
	}
	return Member{int32(ks), int32(ks) + int32(len(key)), int32(vs), int32(vs) + int32(len(value))}, true
}
