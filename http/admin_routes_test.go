package http

import (
	"testing"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"
)

// The local account routes share /api/admin/users/ with the profile routes
// ({user_id}): the router takes the static segment "local" first for the
// methods it has, and the parameter for anything else.
func TestAdminUsersRoutesCoexist(t *testing.T) {
	t.Parallel()
	r := router.New()
	r.Handle("GET", "/api/admin/users/local", func(c *fasthttp.RequestCtx) { c.SetBodyString("local-list") })
	r.Handle("PATCH", "/api/admin/users/local/{local_user_id}", func(c *fasthttp.RequestCtx) { c.SetBodyString("local-patch") })
	r.Handle("POST", "/api/admin/users/local/{local_user_id}/set-password", func(c *fasthttp.RequestCtx) { c.SetBodyString("local-setpw") })
	r.Handle("GET", "/api/admin/users/{user_id}", func(c *fasthttp.RequestCtx) { c.SetBodyString("profile:" + c.UserValue("user_id").(string)) })
	r.Handle("PUT", "/api/admin/users/{user_id}", func(c *fasthttp.RequestCtx) { c.SetBodyString("put:" + c.UserValue("user_id").(string)) })
	r.Handle("POST", "/api/admin/users/{user_id}/payment-issue", func(c *fasthttp.RequestCtx) { c.SetBodyString("pay:" + c.UserValue("user_id").(string)) })
	r.Handle("GET", "/api/admin/users", func(c *fasthttp.RequestCtx) { c.SetBodyString("list") })
	for _, tc := range [][3]string{{"GET", "/api/admin/users/local", "local-list"}, {"PATCH", "/api/admin/users/local/5", "local-patch"},
		{"POST", "/api/admin/users/local/5/set-password", "local-setpw"}, {"GET", "/api/admin/users/ann@example.com", "profile:ann@example.com"},
		{"GET", "/api/admin/users/localx", "profile:localx"}, {"POST", "/api/admin/users/bob/payment-issue", "pay:bob"},
		{"PUT", "/api/admin/users/local", "put:local"}, {"GET", "/api/admin/users", "list"}} {
		var c fasthttp.RequestCtx
		c.Request.Header.SetMethod(tc[0])
		c.Request.SetRequestURI(tc[1])
		r.Handler(&c)
		if string(c.Response.Body()) != tc[2] {
			t.Errorf("%s %s = %q (%d), want %q", tc[0], tc[1], c.Response.Body(), c.Response.StatusCode(), tc[2])
		}
	}
}
