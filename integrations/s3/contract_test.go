package s3

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"docflow"
	"docflow/integrations/desttest"
	"docflow/internal/netguard"
	"docflow/internal/testsupport/testbin"
	"docflow/internal/testsupport/tmpfs"
	"docflow/internal/testsupport/versitygw"
)

var loopback = netguard.Dialer{Allowed: func() []string { return []string{"127.0.0.1"} }}

func integration(endpoint, bucket, prefix, access, secret string) *docflow.Integration {
	return &docflow.Integration{IntegrationType: docflow.IntegrationS3,
		Config: map[string]any{"endpoint": endpoint, "bucket": bucket, "prefix": prefix, "path_style": true,
			"region": versitygw.Region},
		Credentials: map[string]string{"access_key_id": access, "secret_access_key": secret}}
}

func clientOf(in *docflow.Integration) func(testing.TB) docflow.DestinationClient {
	return func(t testing.TB) docflow.DestinationClient {
		c, err := NewIntegration(in, loopback, "")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
}

// makeBucket creates bucket on s with the root account.
func makeBucket(t testing.TB, s *versitygw.Server, bucket string) {
	t.Helper()
	c, err := New(Config{Endpoint: s.Endpoint, Bucket: bucket, Region: versitygw.Region, PathStyle: true,
		AccessKey: versitygw.AccessKey, SecretKey: versitygw.SecretKey}, loopback)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.s3.CreateBucket(context.Background(), &awss3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("create bucket %s: %v", bucket, err)
	}
}

func TestContractVersitygw(t *testing.T) {
	s := versitygw.Start(t, "")
	makeBucket(t, s, "docs")
	closed, err := testbin.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	good := integration(s.Endpoint, "docs", "docflow/out", versitygw.AccessKey, versitygw.SecretKey)
	desttest.Run(t, desttest.Target{
		New: clientOf(good),
		List: func(t testing.TB) []string {
			entries, err := os.ReadDir(s.Path("docs", "docflow/out"))
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			return names
		},
		Open: func(t testing.TB, remote string) io.ReadCloser {
			bucket, key, ok := strings.Cut(strings.TrimPrefix(remote, "s3://"), "/")
			if !ok {
				t.Fatalf("remote path %q", remote)
			}
			f, err := os.Open(s.Path(bucket, key))
			if err != nil {
				t.Fatal(err)
			}
			return f
		},
		// Multipart above 16 MiB: parts of 8 MiB, two at a time.
		LargeSize:      96 << 20,
		MemoryBudget:   48 << 20,
		Unreachable:    clientOf(integration("http://127.0.0.1:"+strconv.Itoa(closed), "docs", "", versitygw.AccessKey, versitygw.SecretKey)),
		BadCredentials: clientOf(integration(s.Endpoint, "docs", "docflow/out", versitygw.AccessKey, "wrong-secret")),
		Forbidden: func(t testing.TB) docflow.DestinationClient {
			s.CreateUser(t, "reader"+strconv.Itoa(os.Getpid()), "readersecret")
			return clientOf(integration(s.Endpoint, "docs", "docflow/out", "reader"+strconv.Itoa(os.Getpid()), "readersecret"))(t)
		},
		Full: func(t testing.TB) docflow.DestinationClient {
			full := versitygw.Start(t, tmpfs.Mount(t, 512<<10, false))
			makeBucket(t, full, "small")
			fill(t, filepath.Join(full.Dir, "filler"))
			return clientOf(integration(full.Endpoint, "small", "", versitygw.AccessKey, versitygw.SecretKey))(t)
		},
	})
}

func fill(t testing.TB, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			return
		}
	}
}
