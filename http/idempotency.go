package http

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"docflow"
)

// The Idempotency-Key rule of the write routes that create documents (the
// uploads and process-url): a request repeated with the same key by the
// same user within docflow.IdempotencyKeyTTL answers what the first one
// answered and runs nothing; the same key on another request (method,
// path or body) is 422; a repeat while the first still runs is 409 with
// Retry-After. Keys live in PostgreSQL, so every api process shares them.

// idempotencyHeader is the request header naming a request.
const idempotencyHeader = "Idempotency-Key"

// defaultIdempotencyHold is how long a claimed key stays locked without
// news of its request (UploadDeps.IdempotencyHold).
const defaultIdempotencyHold = 30 * time.Second

// idempotencySweepEvery is how often one process deletes expired keys.
const idempotencySweepEvery = 10 * time.Minute

// keyBodyHash is the user value a streamed route's handler sets to its
// body's hash once it has read the body (setIdempotentBody).
const keyBodyHash = "docflow.idempotent.body"

// keyClaim is the user value holding the request's claimed key
// (*docflow.IdempotencyClaim), which the handler hands to intake
// (idempotencyClaim).
const keyClaim = "docflow.idempotent.claim"

// idempotency applies the rule with one store; nil store: the header is
// ignored.
type idempotency struct {
	s         *Server
	store     docflow.IdempotencyStore
	hold      time.Duration // 0: defaultIdempotencyHold
	lastSweep atomic.Int64  // unix seconds of this process's last sweep
}

// bodyHasher returns the content hash of a repeated streamed request's
// body, reading it without keeping it.
type bodyHasher func(c *fasthttp.RequestCtx) (string, error)

// intakeAnswer writes a route's answer for a document taken in: the
// answer a repeat of an abandoned request gives from the document its
// first attempt recorded.
type intakeAnswer func(c *fasthttp.RequestCtx, res *docflow.IntakeResult)

// wrap applies the rule to next. lease bounds how long a claimed key
// waits for its request (the route's timeout). The key is claimed for
// the hold only, and renewed while the request runs (keepHeld): a
// process that dies mid-request frees its key within the hold, so that
// the client's retry runs, instead of meeting 409 for the whole route
// timeout (30 minutes for an upload). A streamed route (stream
// not nil) reports its body hash with setIdempotentBody as it reads the
// body, and stream hashes the body of a repeat; other routes' bodies are
// in memory and hashed here. next hands the claim (idempotencyClaim) to
// intake, which records its document with the key; a repeat of a request
// whose process died after that but before it answered is answered by
// answer from that document.
func (in *idempotency) wrap(lease time.Duration, stream bodyHasher, answer intakeAnswer, next Handler) Handler {
	return func(c *fasthttp.RequestCtx) error {
		raw := c.Request.Header.Peek(idempotencyHeader)
		if raw == nil || in.store == nil {
			return next(c)
		}
		key := string(raw)
		if !docflow.ValidIdempotencyKey(key) {
			return invalid("Idempotency-Key", "Idempotency-Key must be 1 to 255 printable ASCII characters")
		}
		ctx := RequestContext(c)
		in.maybeSweep()
		user := idempotencyUser(c)
		reqHash := ""
		if stream == nil {
			sum := sha256.Sum256(c.PostBody())
			reqHash = requestHash(c, hex.EncodeToString(sum[:]))
		}
		hold := in.hold
		if hold <= 0 {
			hold = defaultIdempotencyHold
		}
		hold = min(hold, lease)
		reply, claimed, err := in.store.ClaimIdempotencyKey(ctx, user, key, reqHash, hold)
		if err != nil {
			return err
		}
		if !claimed {
			return in.replay(c, user, key, reply, reqHash, stream, answer)
		}
		c.SetUserValue(keyClaim, &docflow.IdempotencyClaim{User: user, Key: key, RequestHash: reqHash,
			Method: string(c.Method()), Path: string(c.Path())})
		stopHolding := in.keepHeld(c, user, key, hold, lease)
		err = next(c)
		stopHolding()
		status := c.Response.StatusCode()
		if stream != nil {
			if body, _ := c.UserValue(keyBodyHash).(string); body != "" {
				reqHash = requestHash(c, body)
			}
		}
		// NOTE: a failed request leaves nothing to repeat: the key is
		// freed so that the client's retry runs it again. The release
		// outlives the request's context (a timeout must not keep the key).
		bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err != nil || status >= 500 || reqHash == "" {
			if rerr := in.store.ReleaseIdempotencyKey(bg, user, key); rerr != nil {
				in.s.log.Warn().Err(rerr).Str("request_id", RequestID(c)).Msg("idempotency key not released")
			}
			return err
		}
		body := append([]byte(nil), c.Response.Body()...)
		if cerr := in.store.CompleteIdempotencyKey(bg, user, key, reqHash, status, string(c.Response.Header.ContentType()), body); cerr != nil {
			// The request did its work: its answer goes out; a repeat
			// meets a running key until its lease ends.
			in.s.log.Error().Err(cerr).Str("request_id", RequestID(c)).Msg("idempotency key not completed")
		}
		return nil
	}
}

// keepHeld renews the claimed key's lease every third of hold while the
// request runs, at most until lease has passed; the returned function
// stops it and waits until it has stopped.
//
// NOTE: a renewal that fails (the database unreachable for a whole hold)
// lets the lease lapse while the request runs, and a repeat may then run
// too: the price of freeing the keys of dead processes quickly. A
// request needs the database to take its document in as well, so a
// database away that long has failed it too, most likely.
func (in *idempotency) keepHeld(c *fasthttp.RequestCtx, user, key string, hold, lease time.Duration) func() {
	done, stopped := make(chan struct{}), make(chan struct{})
	rid := RequestID(c) // read here: the handler owns c meanwhile
	go func() {
		defer close(stopped)
		tick := time.NewTicker(hold / 3)
		defer tick.Stop()
		end := time.Now().Add(lease)
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				if now.After(end) {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), hold/3)
				err := in.store.ExtendIdempotencyKey(ctx, user, key, hold)
				cancel()
				if err != nil {
					in.s.log.Warn().Err(err).Str("request_id", rid).Msg("idempotency key not renewed")
				}
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// replay answers a repeat from the key's reply.
func (in *idempotency) replay(c *fasthttp.RequestCtx, user, key string, reply *docflow.IdempotentReply, reqHash string,
	stream bodyHasher, answer intakeAnswer) error {
	if reply.Running {
		return &docflow.Error{Code: docflow.ECONFLICT, RetryAfter: 1,
			Message: "A request with this Idempotency-Key is still running; retry after a second"}
	}
	if stream != nil {
		h, err := stream(c)
		if err != nil {
			return err
		}
		reqHash = requestHash(c, h)
	}
	if reqHash != reply.RequestHash {
		return invalid("Idempotency-Key", "This Idempotency-Key was used for a different request; use a new key for a new request")
	}
	c.Response.Header.Set("Idempotent-Replayed", "true")
	if reply.Created != nil {
		// The first attempt recorded its document and died before it
		// answered: this is its answer, stored for the next repeat.
		answer(c, reply.Created)
		ctx, cancel := context.WithTimeout(context.WithoutCancel(RequestContext(c)), 5*time.Second)
		defer cancel()
		body := append([]byte(nil), c.Response.Body()...)
		if err := in.store.CompleteIdempotencyKey(ctx, user, key, reply.RequestHash, c.Response.StatusCode(),
			string(c.Response.Header.ContentType()), body); err != nil {
			in.s.log.Warn().Err(err).Str("request_id", RequestID(c)).Msg("idempotency key not completed")
		}
		return nil
	}
	if reply.ContentType != "" {
		c.Response.Header.SetContentType(reply.ContentType)
	}
	c.SetStatusCode(reply.Status)
	c.Response.SetBody(reply.Body)
	return nil
}

// maybeSweep deletes expired keys in the background, at most once per
// idempotencySweepEvery in this process.
func (in *idempotency) maybeSweep() {
	now := time.Now().Unix()
	last := in.lastSweep.Load()
	if now-last < int64(idempotencySweepEvery/time.Second) || !in.lastSweep.CompareAndSwap(last, now) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := in.store.SweepIdempotencyKeys(ctx); err != nil {
			in.s.log.Warn().Err(err).Msg("expired idempotency keys not swept")
		}
	}()
}

// idempotencyUser is the key's owner: the user id, "" for the single user
// of an instance without authentication.
func idempotencyUser(c *fasthttp.RequestCtx) string {
	if u := CurrentUser(c); u != nil && !u.Anonymous {
		return u.ID
	}
	return ""
}

// requestHash is the request's hash (docflow.IdempotentRequestHash) for
// a body of bodyHash.
func requestHash(c *fasthttp.RequestCtx, bodyHash string) string {
	return docflow.IdempotentRequestHash(string(c.Method()), string(c.Path()), bodyHash)
}

// setIdempotentBody records a streamed request's body hash: its file name
// and the content hash intake computed while storing it.
func setIdempotentBody(c *fasthttp.RequestCtx, filename, contentHash string) {
	c.SetUserValue(keyBodyHash, docflow.IdempotentUploadBody(filename, contentHash))
}

// idempotencyClaim is the request's claimed key for intake, with the
// upload's file name (filename, "" for process-url); nil without a key.
func idempotencyClaim(c *fasthttp.RequestCtx, filename string) *docflow.IdempotencyClaim {
	claim, _ := c.UserValue(keyClaim).(*docflow.IdempotencyClaim)
	if claim == nil {
		return nil
	}
	out := *claim
	out.Filename = filename
	return &out
}
