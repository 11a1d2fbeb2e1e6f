package webhooks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// secretPrefix marks a symmetric Standard Webhooks secret.
const secretPrefix = "whsec_"

// secretBytes is the size of a new secret: the specification asks for 24
// to 64 random bytes.
const secretBytes = 32

// NewSecret returns a new signing secret: whsec_ and the base64 of 32
// random bytes.
func NewSecret() (string, error) {
	b := make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("reading random bytes: %v", err)
	}
	return secretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

// Sign returns the webhook-signature header of one attempt: for each
// secret, "v1," and the base64 HMAC-SHA256 of "id.timestamp.body" keyed
// with the secret's decoded bytes, space-separated (several during a
// rotation; a receiver accepts any one that matches).
func Sign(secrets []string, id string, at time.Time, body []byte) (string, error) {
	ts := strconv.FormatInt(at.Unix(), 10)
	sigs := make([]string, 0, len(secrets))
	for _, s := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, secretPrefix))
		if err != nil {
			return "", fmt.Errorf("decoding signing secret: %v", err)
		}
		m := hmac.New(sha256.New, key)
		m.Write([]byte(id))
		m.Write([]byte{'.'})
		m.Write([]byte(ts))
		m.Write([]byte{'.'})
		m.Write(body)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
	}
	return strings.Join(sigs, " "), nil
}
