package docflow

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"
)

// Device platforms.
const (
	PlatformIOS     = "ios"
	PlatformAndroid = "android"
	PlatformWeb     = "web"
)

// Bounds of a device's fields.
const (
	PushTokenMaxLen  = 512
	DeviceNameMaxLen = 200
)

// MobileDevice is a phone (or browser) registered for push notifications.
// PushToken is input only: the list shows PushTokenPreview, never the
// token, which lets anyone holding it push to the device.
type MobileDevice struct {
	ID               int64     `json:"id"`
	OwnerID          string    `json:"-"`
	PushToken        string    `json:"-"`
	PushTokenPreview string    `json:"push_token_preview"`
	DeviceName       string    `json:"device_name"`
	Platform         string    `json:"platform"`
	IsActive         bool      `json:"is_active"`
	CreatedAt        time.Time `json:"created_at"`
}

// DeviceStore stores the devices registered for push notifications.
type DeviceStore interface {
	// RegisterDevice stores d for d.OwnerID; a push token the owner
	// registered already returns that device, reactivated and renamed
	// (created false). The same token registered by another user before
	// is removed from that user: a phone's token follows whoever signed
	// in on it last.
	RegisterDevice(ctx context.Context, d *MobileDevice) (created bool, err error)
	// FindDevices lists owner's devices, oldest first.
	FindDevices(ctx context.Context, owner string) ([]*MobileDevice, error)
	// DeleteDevice deactivates owner's active device id, or deletes it
	// when it is inactive already (deleted true). ENOTFOUND when owner
	// has no such device.
	DeleteDevice(ctx context.Context, owner string, id int64) (deleted bool, err error)
}

// CheckPushToken validates a push token of the form <kind>[<opaque>]
// (ExponentPushToken[xxxx]): a kind of ASCII letters, digits, '_' or
// '-', and a non-empty opaque part of printable ASCII without brackets,
// at most PushTokenMaxLen bytes in all.
func CheckPushToken(tok string) error {
	if tok == "" {
		return Errorf(EINVALID, "push_token is required")
	}
	if len(tok) > PushTokenMaxLen {
		return Errorf(EINVALID, "push_token must be at most %d bytes", PushTokenMaxLen)
	}
	kind, rest, ok := strings.Cut(tok, "[")
	opaque, ok2 := strings.CutSuffix(rest, "]")
	if !ok || !ok2 || kind == "" || opaque == "" {
		return Errorf(EINVALID, "push_token must have the form <kind>[<token>], e.g. ExponentPushToken[...]")
	}
	for _, r := range kind {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return Errorf(EINVALID, "push_token kind may hold only letters, digits, '_' and '-'")
		}
	}
	for _, r := range opaque {
		if r <= ' ' || r > '~' || r == '[' || r == ']' {
			return Errorf(EINVALID, "push_token must be printable ASCII without spaces or nested brackets")
		}
	}
	return nil
}

// CheckDeviceName validates a device name: at most DeviceNameMaxLen
// characters, no control characters.
func CheckDeviceName(name string) error {
	if !utf8.ValidString(name) || utf8.RuneCountInString(name) > DeviceNameMaxLen {
		return Errorf(EINVALID, "device_name must be valid text of at most %d characters", DeviceNameMaxLen)
	}
	for _, r := range name {
		if r < ' ' || r == 0x7f {
			return Errorf(EINVALID, "device_name must not hold control characters")
		}
	}
	return nil
}

// PushTokenPreview shows enough of a push token to tell devices apart:
// its kind and the first and last 4 characters of its opaque part.
func PushTokenPreview(tok string) string {
	kind, rest, ok := strings.Cut(tok, "[")
	opaque := strings.TrimSuffix(rest, "]")
	if !ok || len(opaque) <= 8 {
		return kind + "[…]"
	}
	return kind + "[" + opaque[:4] + "…" + opaque[len(opaque)-4:] + "]"
}
