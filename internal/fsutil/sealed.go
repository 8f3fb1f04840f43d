package fsutil

import (
	"bytes"
	"encoding/hex"
	"errors"

	"github.com/zeebo/blake3"
)

// Every stored format of evpack is sealed the same way: a magic string that
// names the format and its version, the payload, and a BLAKE3-256 checksum of
// all that precedes it, so a truncated or corrupted file is caught before a
// byte of it is trusted.

// sumSize is the length of the checksum.
const sumSize = 32

// Errors Unseal returns; callers wrap them with their format's error and the
// file's path.
var (
	ErrNotThisFormat = errors.New("not in this format (wrong header)")
	ErrChecksum      = errors.New("checksum mismatch (truncated or corrupted)")
)

// Seal appends the checksum to b, which must start with the format's magic.
func Seal(b []byte) []byte {
	sum := blake3.Sum256(b)
	return append(b, sum[:]...)
}

// Unseal checks that raw starts with magic, holds at least minPayload bytes
// after it, and ends with the checksum of the rest; it returns the payload
// between magic and checksum.
func Unseal(raw []byte, magic string, minPayload int) ([]byte, error) {
	if len(raw) < len(magic)+minPayload+sumSize || string(raw[:len(magic)]) != magic {
		return nil, ErrNotThisFormat
	}
	body, sum := raw[:len(raw)-sumSize], raw[len(raw)-sumSize:]
	if want := blake3.Sum256(body); !bytes.Equal(want[:], sum) {
		return nil, ErrChecksum
	}
	return body[len(magic):], nil
}

// Text formats (the manifest, batch files) are sealed so that they stay
// readable: the body, whose last byte is a newline, then one line
// "blake3:<hex>" holding the BLAKE3-256 of the body.
const textSumPrefix = "blake3:"

// SealText appends the checksum line to body, which must end with '\n'.
// body is not changed: the result is a new slice.
func SealText(body []byte) []byte {
	return AppendSeal(append(make([]byte, 0, len(body)+TextSealLen), body...))
}

// TextSealLen is the length of the checksum line SealText appends.
const TextSealLen = len(textSumPrefix) + 2*sumSize + 1

// AppendSeal is SealText reusing body's array: it appends the checksum line
// to body in place when body has room for TextSealLen more bytes.
func AppendSeal(body []byte) []byte {
	sum := blake3.Sum256(body)
	out := append(body, textSumPrefix...)
	out = hex.AppendEncode(out, sum[:])
	return append(out, '\n')
}

// UnsealText checks the checksum line that ends raw and returns the body
// before it.
func UnsealText(raw []byte) ([]byte, error) {
	if len(raw) == 0 || raw[len(raw)-1] != '\n' {
		return nil, ErrChecksum
	}
	cut := bytes.LastIndexByte(raw[:len(raw)-1], '\n') + 1 // start of the last line
	body, last := raw[:cut], raw[cut:len(raw)-1]
	if !bytes.HasPrefix(last, []byte(textSumPrefix)) {
		return nil, ErrChecksum
	}
	// Compared as the lower-case hex SealText writes, not decoded: hex
	// decoding also takes upper case, and a file that reads back must be
	// the one bytes its body seals to.
	want := blake3.Sum256(body)
	if string(last[len(textSumPrefix):]) != hex.EncodeToString(want[:]) {
		return nil, ErrChecksum
	}
	return body, nil
}
