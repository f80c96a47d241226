// Package s3 is the S3 destination: documents are uploaded as objects
// of a bucket on Amazon S3 or any S3-compatible server (config.endpoint),
// with aws-sdk-go-v2. Bodies are streamed: up to 16 MiB in one PutObject,
// larger ones as a multipart upload in 8 MiB parts, two at a time
// (feature/s3/transfermanager), so a delivery holds at most a few parts in
// memory whatever its size. An object of the same key is replaced, which
// S3 does atomically.
//
// The client is built from the integration's own settings only (never
// the process's AWS environment or shared files) and connects through
// internal/netguard's dialer.
package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"docflow"
	"docflow/internal/netguard"
)

// Upload shape: objects above MultipartThreshold go in parts of PartSize,
// Concurrency parts at once.
const (
	MultipartThreshold = 16 << 20
	PartSize           = 8 << 20
	Concurrency        = 2
)

// Config is an S3 destination's configuration.
type Config struct {
	// Endpoint is the server's URL; "" is Amazon S3 in Region.
	Endpoint  string
	Bucket    string
	Region    string
	Prefix    string // key prefix, "" or ending in "/"
	PathStyle bool
	AccessKey string
	SecretKey string
	// CACertificate, when set, is the only CA trusted (PEM).
	CACertificate string
}

// ParseConfig reads an S3 integration's configuration.
func ParseConfig(in *docflow.Integration) (Config, error) {
	str := func(k string) string { s, _ := in.Config[k].(string); return strings.TrimSpace(s) }
	cfg := Config{Endpoint: str("endpoint"), Bucket: str("bucket"), Region: str("region"),
		AccessKey: in.Credentials["access_key_id"], SecretKey: in.Credentials["secret_access_key"],
		CACertificate: str("ca_certificate")}
	cfg.PathStyle, _ = in.Config["path_style"].(bool)
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.Bucket == "" {
		return cfg, errors.New("config.bucket is required")
	}
	if cfg.AccessKey == "" || cfg.SecretKey == "" {
		return cfg, errors.New("credentials.access_key_id and credentials.secret_access_key are required")
	}
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return cfg, errors.New("config.endpoint must be an http or https URL")
		}
	}
	prefix := strings.Trim(str("prefix"), "/")
	for _, seg := range strings.Split(prefix, "/") {
		if seg == ".." || seg == "." {
			return cfg, errors.New(`config.prefix must not contain "." or ".." segments`)
		}
	}
	if prefix != "" {
		cfg.Prefix = prefix + "/"
	}
	return cfg, nil
}

// Client is the docflow.DestinationClient of an S3 bucket.
type Client struct {
	cfg  Config
	s3   *awss3.Client
	up   *transfermanager.Client
	http *http.Client
}

var (
	_ docflow.DestinationClient   = (*Client)(nil)
	_ docflow.DestinationLocation = (*Client)(nil)
)

// New returns a client of cfg that connects through dialer.
func New(cfg Config, dialer netguard.Dialer) (*Client, error) {
	tlsCfg, err := docflow.IntegrationTLS(map[string]any{"ca_certificate": cfg.CACertificate}, "")
	if err != nil {
		return nil, err
	}
	hc := netguard.Client(netguard.ClientOptions{Dialer: dialer, TLS: tlsCfg, MaxIdleConnsPerHost: Concurrency + 1})
	opts := awss3.Options{
		Region:       cfg.Region,
		Credentials:  credentials.NewStaticCredentialsProvider(cfg.AccessKey, cfg.SecretKey, ""),
		UsePathStyle: cfg.PathStyle,
		HTTPClient:   hc,
		// NOTE: many S3-compatible servers take no streamed (aws-chunked)
		// checksums: a checksum only where the API requires one.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	}
	if cfg.Endpoint != "" {
		opts.BaseEndpoint = aws.String(cfg.Endpoint)
	}
	client := awss3.New(opts)
	up := transfermanager.New(client, func(o *transfermanager.Options) {
		o.MultipartUploadThreshold = MultipartThreshold
		o.PartSizeBytes = PartSize
		o.Concurrency = Concurrency
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		// An upload that fails or is cancelled is aborted on the server
		// all the same, its parts freed.
		o.FailTimeout = 30 * time.Second
	})
	return &Client{cfg: cfg, s3: client, up: up, http: hc}, nil
}

// NewIntegration returns the client of an S3 integration: the
// docflow.DestinationFactory internal/app registers. region is the region
// of an integration whose config names none (the AWS_REGION setting; ""
// keeps us-east-1).
func NewIntegration(in *docflow.Integration, dialer netguard.Dialer, region string) (docflow.DestinationClient, error) {
	cfg, err := ParseConfig(in)
	if err != nil {
		return nil, err
	}
	if r, _ := in.Config["region"].(string); strings.TrimSpace(r) == "" && strings.TrimSpace(region) != "" {
		cfg.Region = strings.TrimSpace(region)
	}
	return New(cfg, dialer)
}

// Location implements docflow.DestinationLocation.
func (c *Client) Location() string {
	where := "bucket " + c.cfg.Bucket
	if c.cfg.Prefix != "" {
		where += ", prefix " + c.cfg.Prefix
	}
	if c.cfg.Endpoint != "" {
		where += " at " + c.cfg.Endpoint
	}
	return where
}

// Connect implements docflow.DestinationClient: one listing of at most one
// key under the prefix checks the credentials and the bucket. A refusal
// to list (AccessDenied) is no failure: a key may be allowed to write
// without listing.
func (c *Client) Connect(ctx context.Context) error {
	_, err := c.s3.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: aws.String(c.cfg.Bucket),
		Prefix: aws.String(c.cfg.Prefix), MaxKeys: aws.Int32(1)})
	if err == nil {
		return nil
	}
	f := failure("list the bucket", err)
	if docflow.DestinationFailureOf(f) == docflow.DestForbidden {
		return nil
	}
	return f
}

// Close implements docflow.DestinationClient: idle connections are closed.
func (c *Client) Close(context.Context) error {
	c.http.CloseIdleConnections()
	return nil
}

// Deliver implements docflow.DestinationClient. The remote path is
// s3://<bucket>/<key>.
func (c *Client) Deliver(ctx context.Context, doc docflow.DestinationDoc, body io.Reader) (string, error) {
	if err := docflow.CheckDestinationName(doc.Name); err != nil {
		return "", docflow.DestFail(docflow.DestInvalid, err.Error(), err)
	}
	key := c.cfg.Prefix + doc.Name
	// The uploader reads the body without looking at ctx: a reader that
	// does stops a cancelled delivery between two reads.
	in := &transfermanager.UploadObjectInput{Bucket: aws.String(c.cfg.Bucket), Key: aws.String(key),
		Body: ctxReader{ctx: ctx, r: body}}
	if doc.MimeType != "" {
		in.ContentType = aws.String(doc.MimeType)
	}
	if doc.Size > 0 {
		in.ContentLength = aws.Int64(doc.Size)
	}
	var opts []func(*transfermanager.Options)
	if doc.Size > MultipartThreshold {
		// NOTE: the uploader reads up to its threshold before it decides;
		// a body known to be larger starts with its first part instead.
		opts = append(opts, func(o *transfermanager.Options) { o.MultipartUploadThreshold = PartSize })
	}
	if _, err := c.up.UploadObject(ctx, in, opts...); err != nil {
		return "", failure("upload", err)
	}
	return "s3://" + c.cfg.Bucket + "/" + key, nil
}

// Probe implements docflow.DestinationClient: a small object is written
// under the prefix and deleted.
func (c *Client) Probe(ctx context.Context) error {
	if err := c.Connect(ctx); err != nil {
		return err
	}
	key := fmt.Sprintf("%s.docflow-test-%d", c.cfg.Prefix, os.Getpid())
	if _, err := c.s3.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String(c.cfg.Bucket), Key: aws.String(key),
		Body: bytes.NewReader([]byte("docflow test\n"))}); err != nil {
		return failure("write a test object", err)
	}
	if _, err := c.s3.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: aws.String(c.cfg.Bucket), Key: aws.String(key)}); err != nil {
		return failure("remove the test object", err)
	}
	return nil
}

// errorClasses are the S3 error codes whose class is not their status's.
var errorClasses = map[string]docflow.DestinationFailure{
	"InvalidAccessKeyId":           docflow.DestAuth,
	"SignatureDoesNotMatch":        docflow.DestAuth,
	"InvalidToken":                 docflow.DestAuth,
	"ExpiredToken":                 docflow.DestAuth,
	"InvalidSecurity":              docflow.DestAuth,
	"AuthorizationHeaderMalformed": docflow.DestAuth,
	"AccessDenied":                 docflow.DestForbidden,
	"AllAccessDisabled":            docflow.DestForbidden,
	"AccountProblem":               docflow.DestForbidden,
	"NoSuchBucket":                 docflow.DestUnavailable,
	"QuotaExceeded":                docflow.DestFull,
	"StorageFull":                  docflow.DestFull,
	"InsufficientStorage":          docflow.DestFull,
	"XMinioStorageFull":            docflow.DestFull,
	"SlowDown":                     docflow.DestRateLimited,
	"TooManyRequests":              docflow.DestRateLimited,
	"RequestLimitExceeded":         docflow.DestRateLimited,
	"InvalidObjectName":            docflow.DestInvalid,
	"KeyTooLongError":              docflow.DestInvalid,
}

// failure classes an SDK error: by the S3 error code (errorClasses), else
// by its HTTP status (docflow.DestFailHTTP), else as a failed connection
// (netguard.DestFailure). The reason is the status and the error code,
// never the server's message text.
func failure(what string, err error) error {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() > 0 {
		status := re.HTTPStatusCode()
		code := ""
		var api smithy.APIError
		if errors.As(err, &api) {
			code = api.ErrorCode()
		}
		reason := fmt.Sprintf("S3 answered %d %s to %s", status, http.StatusText(status), what)
		if code != "" && code != http.StatusText(status) {
			reason = fmt.Sprintf("S3 answered %d %s to %s", status, code, what)
		}
		var retry time.Duration
		if re.Response != nil {
			retry = retryAfter(re.Response.Header.Get("Retry-After"))
		}
		de := docflow.DestFailHTTP(status, reason, retry, err)
		if class, ok := errorClasses[code]; ok {
			de.Class = class
		}
		if code == "NoSuchBucket" {
			de.Reason = fmt.Sprintf("S3 answered %d NoSuchBucket to %s: create the bucket first", status, what)
		}
		return de
	}
	f := netguard.DestFailure(err)
	var de *docflow.DestinationError
	if errors.As(f, &de) && de.Reason != "" {
		de.Reason = fmt.Sprintf("could not %s: %s", what, de.Reason)
	}
	return f
}

// retryAfter reads a Retry-After header in seconds ("" or a date: none).
func retryAfter(v string) time.Duration {
	var n int
	if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d", &n); err != nil || n < 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
