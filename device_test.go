package docflow

import (
	"strings"
	"testing"
)

func TestCheckPushToken(t *testing.T) {
	for _, ok := range []string{"ExponentPushToken[xxxxxxxxxxxxxxxxxxxxxx]", "ExpoPushToken[a-b_c:d]", "fcm-v1[abc]"} {
		if err := CheckPushToken(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "abc", "[x]", "Expo[]", "Expo[x", "Expo[x]y", "Ex po[x]", "Expo[a b]", "Expo[a[b]]",
		"Expo[é]", "Expo[" + strings.Repeat("x", PushTokenMaxLen) + "]"} {
		if err := CheckPushToken(bad); ErrorCode(err) != EINVALID {
			t.Errorf("%q: %v, want EINVALID", bad, err)
		}
	}
}

func TestPushTokenPreview(t *testing.T) {
	for in, want := range map[string]string{
		"ExponentPushToken[abcdefghijklmnop]": "ExponentPushToken[abcd…mnop]",
		"ExponentPushToken[short]":            "ExponentPushToken[…]",
	} {
		if got := PushTokenPreview(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}
