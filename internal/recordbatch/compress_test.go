package recordbatch

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func testPayload(n int) []byte {
	var b []byte
	for i := 0; len(b) < n; i++ {
		b = fmt.Appendf(b, "record %d, ", i%97)
	}
	return b[:n]
}

// TestCompressRoundTrip: every codec and magic Kafka allows compresses and decompresses back to the
// same bytes, from empty to several 64 kB LZ4 blocks and 32 kB snappy chunks; lz4's frame header is
// Kafka's (the broken descriptor checksum for magic 0 only); zstd below magic 2 is refused both ways.
func TestCompressRoundTrip(t *testing.T) {
	for _, codec := range []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		for magic := int8(0); magic <= 2; magic++ {
			for _, n := range []int{0, 1, 1000, 200_000} {
				data := testPayload(n)
				comp, err := Compress(codec, magic, data)
				if codec == CodecZstd && magic < 2 {
					if !errors.Is(err, ErrCodecNotAllowed) {
						t.Fatalf("zstd magic %d: error %v, want ErrCodecNotAllowed", magic, err)
					}
					if _, err := Decompress(codec, magic, []byte{1}, 10); !errors.Is(err, ErrCodecNotAllowed) {
						t.Fatalf("zstd magic %d decompress: error %v, want ErrCodecNotAllowed", magic, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s magic %d, %d bytes: %v", codec, magic, n, err)
				}
				if codec == CodecLZ4 {
					want := lz4Header
					if magic == 0 {
						want = lz4BrokenHeader
					}
					if !bytes.HasPrefix(comp, want) {
						t.Fatalf("lz4 magic %d header % x, want % x", magic, comp[:7], want)
					}
				}
				got, err := Decompress(codec, magic, comp, 1<<20)
				if err != nil || !bytes.Equal(got, data) {
					t.Fatalf("%s magic %d, %d bytes: %d bytes back, error %v", codec, magic, n, len(got), err)
				}
			}
		}
	}
}

// TestDecompressLimitsAndErrors: output past the limit is ErrDecompressedTooLarge, garbage
// ErrCompressed, an unknown codec ErrUnknownCodec; an LZ4 frame of magic 1 or 2 with the broken
// checksum of magic 0 is refused (Kafka checks it from magic 1 on).
func TestDecompressLimitsAndErrors(t *testing.T) {
	data := make([]byte, 10_000)
	for _, codec := range []Codec{CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		comp, err := Compress(codec, 2, data)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Decompress(codec, 2, comp, 9_999); !errors.Is(err, ErrDecompressedTooLarge) {
			t.Fatalf("%s: error %v, want ErrDecompressedTooLarge", codec, err)
		}
		if got, err := Decompress(codec, 2, comp, 10_000); err != nil || len(got) != 10_000 {
			t.Fatalf("%s at the limit: %d bytes, %v", codec, len(got), err)
		}
		if _, err := Decompress(codec, 2, []byte("not compressed at all"), 1000); !errors.Is(err, ErrCompressed) {
			t.Fatalf("%s garbage: error %v, want ErrCompressed", codec, err)
		}
	}
	if _, err := Compress(5, 2, data); !errors.Is(err, ErrUnknownCodec) {
		t.Fatalf("codec 5: %v", err)
	}
	if _, err := Decompress(7, 2, data, 1); !errors.Is(err, ErrUnknownCodec) {
		t.Fatalf("codec 7: %v", err)
	}
	broken, _ := Compress(CodecLZ4, 0, data)
	for _, magic := range []int8{1, 2} {
		if _, err := Decompress(CodecLZ4, magic, broken, 1<<20); !errors.Is(err, ErrCompressed) {
			t.Fatalf("magic %d with the broken lz4 checksum: %v, want ErrCompressed", magic, err)
		}
	}
}

// TestCodecsReadClientBytes: bytes written by kafka-python 2.0.2's codecs (kafka/codec.py) for
// b"hello" — xerial-framed snappy, lz4_encode_old_kafka (format 0, the broken checksum 0x1a) and
// lz4_encode (a frame with the content size, FLG 0x68) — decompress, and ours for the same input are
// byte for byte theirs where the framing is the same; franz-go's codecs (kgo's compressor: raw
// snappy, its own lz4 frames, zstd) and ours read each other's batches.
func TestCodecsReadClientBytes(t *testing.T) {
	hello := []byte("hello")
	for _, c := range []struct {
		codec Codec
		magic int8
		hex   string
		same  bool // Compress writes the same bytes
	}{
		{CodecSnappy, 0, "82534e4150505900000000010000000100000007051068656c6c6f", true},
		{CodecLZ4, 0, "04224d1860401a0500008068656c6c6f00000000", true},
		{CodecLZ4, 1, "04224d1868400500000000000000610500008068656c6c6f00000000", false},
		{CodecLZ4, 0, "04224d1868400500000000000000610500008068656c6c6f00000000", false}, // magic 0 ignores the checksum, even a right one
	} {
		b, _ := hex.DecodeString(c.hex)
		got, err := Decompress(c.codec, c.magic, b, 100)
		if err != nil || string(got) != "hello" {
			t.Fatalf("%s magic %d %s: %q, %v", c.codec, c.magic, c.hex, got, err)
		}
		if c.same {
			ours, err := Compress(c.codec, c.magic, hello)
			if err != nil || !bytes.Equal(ours, b) {
				t.Fatalf("%s magic %d: we write %x, kafka-python %s (%v)", c.codec, c.magic, ours, c.hex, err)
			}
		}
	}
	data := testPayload(100_000)
	dec := kgo.DefaultDecompressor()
	for _, c := range []struct {
		codec Codec
		kgo   kgo.CompressionCodec
	}{{CodecGzip, kgo.GzipCompression()}, {CodecSnappy, kgo.SnappyCompression()}, {CodecLZ4, kgo.Lz4Compression()}, {CodecZstd, kgo.ZstdCompression()}} {
		comp, err := kgo.DefaultCompressor(c.kgo)
		if err != nil {
			t.Fatal(err)
		}
		theirs, used := comp.Compress(new(bytes.Buffer), data)
		if Codec(used) != c.codec {
			t.Fatalf("kgo used codec %d for %s", used, c.codec)
		}
		if got, err := Decompress(c.codec, 2, theirs, 1<<20); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("kgo's %s: %d bytes back, %v", c.codec, len(got), err)
		}
		ours, _ := Compress(c.codec, 2, data)
		if got, err := dec.Decompress(ours, kgo.CompressionCodecType(c.codec)); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("kgo reading our %s: %d bytes back, %v", c.codec, len(got), err)
		}
	}
}

// FuzzDecompress: any bytes, codec and magic never panic Decompress, never give more than the limit,
// and what compresses decompresses back.
func FuzzDecompress(f *testing.F) {
	for _, c := range []Codec{CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		for magic := int8(0); magic <= 2; magic++ {
			if b, err := Compress(c, magic, testPayload(300)); err == nil {
				f.Add(int8(c), magic, b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, codec, magic int8, data []byte) {
		const limit = 1 << 16
		out, err := Decompress(Codec(codec), magic, data, limit)
		if err == nil && len(out) > limit && Codec(codec) != CodecNone {
			t.Fatalf("%d bytes past the limit %d", len(out), limit)
		}
		if len(data) > limit {
			return
		}
		comp, err := Compress(Codec(codec), magic, data)
		if err != nil {
			return
		}
		back, err := Decompress(Codec(codec), magic, comp, limit)
		if err != nil || !bytes.Equal(back, data) {
			t.Fatalf("codec %d magic %d: %d bytes back of %d, %v", codec, magic, len(back), len(data), err)
		}
	})
}
