package http

import (
	"strings"

	"github.com/valyala/fasthttp"

	"docflow"
)

// MobileDeps is what the device registration of the Mobile namespace
// needs.
type MobileDeps struct {
	Devices docflow.DeviceStore
}

// MountMobile registers the push-device routes of the Mobile namespace:
// register-device, the list of one's devices and their deletion. Each
// user sees and deletes only their own devices; the push token is input
// only (the list shows a preview).
func (s *Server) MountMobile(d MobileDeps) {
	if d.Devices == nil {
		panic("http: MountMobile needs Devices")
	}
	h := &deviceHandlers{d: d}
	b := Route{Auth: AuthUser}
	s.Handle("POST", "/api/mobile/register-device", b, h.register, docRegisterDevice)
	s.Handle("GET", "/api/mobile/devices", b, h.list, docListDevices)
	s.Handle("DELETE", "/api/mobile/devices/{device_id}", b, h.delete, docDeleteDevice)
}

type deviceHandlers struct {
	d MobileDeps
}

func (h *deviceHandlers) register(c *fasthttp.RequestCtx) error {
	var req deviceRegistration
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	dev, err := checkDevice(req.PushToken, req.DeviceName, req.Platform)
	if err != nil {
		return err
	}
	dev.OwnerID = CurrentUser(c).ID
	// 201 for a token registered again too: the app calls this at
	// every start and gets the same answer (the existing device).
	if _, err := h.d.Devices.RegisterDevice(RequestContext(c), dev); err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusCreated, dev)
	return nil
}

func (h *deviceHandlers) list(c *fasthttp.RequestCtx) error {
	list, err := h.d.Devices.FindDevices(RequestContext(c), CurrentUser(c).ID)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, list)
	return nil
}

func (h *deviceHandlers) delete(c *fasthttp.RequestCtx) error {
	id, err := pathID(c, "device_id")
	if err != nil {
		return err
	}
	deleted, err := h.d.Devices.DeleteDevice(RequestContext(c), CurrentUser(c).ID, id)
	if err != nil {
		return err
	}
	msg := "Device deactivated"
	if deleted {
		msg = "Device deleted"
	}
	writeJSON(c, fasthttp.StatusOK, Detail{Detail: msg})
	return nil
}

// checkDevice validates a registration: push_token of the form
// <kind>[<token>], platform ios, android or web, an optional device_name.
func checkDevice(token, name, platform *string) (*docflow.MobileDevice, error) {
	if token == nil {
		return nil, invalid("push_token", "push_token is required")
	}
	tok := strings.TrimSpace(*token)
	if err := docflow.CheckPushToken(tok); err != nil {
		return nil, invalid("push_token", "%s", docflow.ErrorMessage(err))
	}
	if platform == nil {
		return nil, invalid("platform", "platform is required (ios, android or web)")
	}
	switch *platform {
	case docflow.PlatformIOS, docflow.PlatformAndroid, docflow.PlatformWeb:
	default:
		return nil, invalid("platform", "platform must be ios, android or web")
	}
	dev := &docflow.MobileDevice{PushToken: tok, Platform: *platform}
	if name != nil {
		n := strings.TrimSpace(*name)
		if err := docflow.CheckDeviceName(n); err != nil {
			return nil, invalid("device_name", "%s", docflow.ErrorMessage(err))
		}
		dev.DeviceName = n
	}
	return dev, nil
}
