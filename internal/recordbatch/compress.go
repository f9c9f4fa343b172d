package recordbatch

// Compression of a batch's records section (magic 2) or of a compressed wrapper message's value
// (message formats 0 and 1), framed as Kafka 3.9's codecs frame it
// (org.apache.kafka.common.compress.{Gzip,Snappy,Lz4,Zstd}Compression), with the libraries in go.mod:
//
//   - gzip: an RFC 1952 stream (klauspost/compress/gzip); a gzip level (-1 default, 1..9).
//   - snappy: written in xerial's framing (SnappyOutputStream: the header 0x82 "SNAPPY" 0, version 1,
//     compatible version 1, then blocks of up to 32 kB, each a big-endian length and a raw snappy
//     block); read framed or raw, as SnappyInputStream reads both (klauspost/compress/snappy/xerial).
//   - lz4: the LZ4 frame format as Lz4BlockOutputStream writes it: 64 kB independent blocks, no block
//     or content checksum (FLG 0x60, BD 0x40), level 9 by default (pierrec/lz4). For magic 0 the frame
//     descriptor's checksum byte is the one of KAFKA-3160 (useBrokenFlagDescriptorChecksum: the hash
//     taken over the frame's magic number too), which is what 0.8-era readers check and what Kafka
//     writes when it down-converts to format 0; reading magic 0, the byte is ignored
//     (Lz4BlockInputStream's ignoreFlagDescriptorChecksum), reading magic 1 or 2 it must be right.
//   - zstd: a zstd frame (klauspost/compress/zstd), magic 2 only: message formats 0 and 1 have no
//     zstd (MemoryRecordsBuilder refuses to write it, AbstractLegacyRecordBatch's deep iterator to
//     read it: ErrCodecNotAllowed).

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Codec is a compression codec: the low three bits of a batch's attributes (magic 2) or of a
// message's attributes (magic 0 and 1); CompressionType's ids.
type Codec int8

// The codecs (CompressionType.NONE, GZIP, SNAPPY, LZ4, ZSTD).
const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

// String is the codec's name as compression.type spells it (none for CodecNone).
func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

// DefaultLevel asks CompressLevel for the codec's default level (Kafka's: gzip's deflate default,
// lz4 9, zstd 3).
const DefaultLevel = -1 << 31

// Errors of Compress and Decompress.
var (
	// ErrUnknownCodec: a codec id outside 0..4 (CompressionType.forId's IllegalArgumentException).
	ErrUnknownCodec = errors.New("unknown compression codec")
	// ErrCodecNotAllowed: zstd with magic 0 or 1.
	ErrCodecNotAllowed = errors.New("compression codec not allowed in this message format")
	// ErrDecompressedTooLarge: the data decompresses past the caller's limit.
	ErrDecompressedTooLarge = errors.New("decompressed data over the limit")
	// ErrCompressed wraps every error of data that does not decompress with its codec.
	ErrCompressed = errors.New("invalid compressed data")
)

// Compress is CompressLevel at the codec's default level.
func Compress(codec Codec, magic int8, data []byte) ([]byte, error) {
	return CompressLevel(codec, magic, DefaultLevel, data)
}

// CompressLevel compresses data (encoded records: a v2 records section, or a message set for magic 0
// and 1) with codec as Kafka writes it for a batch or wrapper message of that magic; level is the
// codec's Kafka level (compression.gzip.level -1..9, compression.lz4.level 1..17 — above 9 taken as
// 9, pierrec's highest —, compression.zstd.level; ignored for none and snappy) or DefaultLevel.
// CodecNone returns data itself. Errors: ErrUnknownCodec, ErrCodecNotAllowed (zstd below magic 2),
// or the codec's for a level it refuses.
func CompressLevel(codec Codec, magic int8, level int, data []byte) ([]byte, error) {
	switch codec {
	case CodecNone:
		return data, nil
	case CodecGzip:
		if level == DefaultLevel {
			level = gzip.DefaultCompression
		}
		var buf bytes.Buffer
		w, err := gzip.NewWriterLevel(&buf, level)
		if err != nil {
			return nil, fmt.Errorf("gzip level %d: %w", level, err)
		}
		if _, err := w.Write(data); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case CodecSnappy:
		return xerial.Encode(nil, data), nil
	case CodecLZ4:
		return compressLZ4(magic, level, data)
	case CodecZstd:
		if magic < Magic {
			return nil, fmt.Errorf("%w: ZStandard compression is not supported for magic %d", ErrCodecNotAllowed, magic)
		}
		if level == DefaultLevel {
			level = 3
		}
		enc, err := zstdEncoder(level)
		if err != nil {
			return nil, err
		}
		return enc.EncodeAll(data, nil), nil
	}
	return nil, fmt.Errorf("%w %d", ErrUnknownCodec, codec)
}

// Decompress undoes codec on data (a records section of magic 2, or a wrapper message's value of
// magic 0 or 1), reading the framings Kafka reads (see the package's notes on compression); limit
// (bytes, > 0) bounds the output, as a fetch or request size bounds what is worth decompressing.
// CodecNone returns data itself. Errors: ErrUnknownCodec, ErrCodecNotAllowed (zstd below magic 2),
// ErrDecompressedTooLarge, or ErrCompressed wrapping the codec's error.
func Decompress(codec Codec, magic int8, data []byte, limit int) ([]byte, error) {
	var out []byte
	var err error
	switch codec {
	case CodecNone:
		return data, nil
	case CodecGzip:
		var r *gzip.Reader
		if r, err = gzip.NewReader(bytes.NewReader(data)); err == nil {
			out, err = readLimited(r, limit)
		}
	case CodecSnappy:
		if out, err = xerial.Decode(data); err == nil && len(out) > limit {
			return nil, fmt.Errorf("%w: snappy data of %d bytes, limit %d", ErrDecompressedTooLarge, len(out), limit)
		}
	case CodecLZ4:
		if magic == 0 {
			if data, err = withRightDescriptorChecksum(data); err != nil {
				break
			}
		}
		out, err = readLimited(lz4.NewReader(bytes.NewReader(data)), limit)
	case CodecZstd:
		if magic < Magic {
			return nil, fmt.Errorf("%w: zstd in a message of magic %d (Kafka: Invalid wrapper compressionType found in legacy deep record iterator)", ErrCodecNotAllowed, magic)
		}
		d := zstdDecoders.Get().(*zstd.Decoder)
		if err = d.Reset(bytes.NewReader(data)); err == nil {
			out, err = readLimited(d, limit)
		}
		d.Reset(nil) //nolint:errcheck // releases data; a nil reader never fails
		zstdDecoders.Put(d)
	default:
		return nil, fmt.Errorf("%w %d", ErrUnknownCodec, codec)
	}
	if errors.Is(err, ErrDecompressedTooLarge) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCompressed, codec, err)
	}
	return out, nil
}

// readLimited reads r to its end, at most limit bytes.
func readLimited(r io.Reader, limit int) ([]byte, error) {
	out, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(out) > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrDecompressedTooLarge, limit)
	}
	return out, nil
}

// The LZ4 frame header Kafka writes (Lz4BlockOutputStream): the frame magic 0x184D2204 (little
// endian), FLG 0x60 (version 1, independent blocks, no checksums, no content size), BD 0x40 (64 kB
// blocks), then the descriptor checksum: 0x82 (the second byte of xxHash32 of FLG and BD, the LZ4
// frame format's) or, for magic 0, 0x1A (the same taken over the magic number too: KAFKA-3160's
// broken checksum, what 0.8-era clients compute; the tests check both against the bytes of Kafka
// 3.9's down-conversion and of kafka-python).
var (
	lz4Header       = []byte{0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82}
	lz4BrokenHeader = []byte{0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x1a}
)

// compressLZ4 writes data as one LZ4 frame with Kafka's header (lz4Header, lz4BrokenHeader for
// magic 0).
func compressLZ4(magic int8, level int, data []byte) ([]byte, error) {
	if level == DefaultLevel {
		level = 9
	}
	var lv lz4.CompressionLevel
	switch {
	case level < 1 || level > 17:
		return nil, fmt.Errorf("lz4 level %d: must be 1..17", level)
	case level > 9:
		lv = lz4.Level9
	default:
		lv = lz4.CompressionLevel(1 << (8 + level)) // lz4.Level1 .. lz4.Level9
	}
	var buf bytes.Buffer
	w := lz4.NewWriter(&buf)
	if err := w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false), lz4.CompressionLevelOption(lv)); err != nil {
		return nil, err
	}
	if _, err := w.Write(data); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	out := buf.Bytes()
	if !bytes.HasPrefix(out, lz4Header) {
		return nil, fmt.Errorf("lz4: the frame header is % x, not Kafka's % x", out[:min(len(out), len(lz4Header))], lz4Header)
	}
	if magic == 0 {
		out[len(lz4Header)-1] = lz4BrokenHeader[len(lz4BrokenHeader)-1]
	}
	return out, nil
}

// withRightDescriptorChecksum returns data (an LZ4 frame of magic 0, whose descriptor checksum Kafka
// does not check) with the checksum the LZ4 frame format wants, so that the frame reader takes it:
// the checksum of the same descriptor as pierrec/lz4's writer computes it. A descriptor the writer
// cannot reproduce (a dictionary id, reserved bits, dependent blocks) is an error, as in Kafka
// (Lz4BlockInputStream's FLG and BD checks).
func withRightDescriptorChecksum(data []byte) ([]byte, error) {
	if len(data) < 7 || !bytes.Equal(data[:4], lz4Header[:4]) {
		return data, nil // the reader names the problem
	}
	if bytes.HasPrefix(data, lz4BrokenHeader) {
		fixed := bytes.Clone(data)
		fixed[6] = lz4Header[6]
		return fixed, nil
	}
	flg, bd := data[4], data[5]
	descLen := 2
	opts := []lz4.Option{lz4.BlockChecksumOption(flg&0x10 != 0), lz4.ChecksumOption(flg&0x04 != 0)}
	if flg&0x08 != 0 {
		if len(data) < 4+2+8+1 {
			return nil, errors.New("lz4: truncated frame descriptor")
		}
		size := uint64(0)
		for i := 7; i >= 0; i-- {
			size = size<<8 | uint64(data[6+i])
		}
		opts = append(opts, lz4.SizeOption(size))
		descLen += 8
	}
	switch bd >> 4 & 0x7 {
	case 4:
		opts = append(opts, lz4.BlockSizeOption(lz4.Block64Kb))
	case 5:
		opts = append(opts, lz4.BlockSizeOption(lz4.Block256Kb))
	case 6:
		opts = append(opts, lz4.BlockSizeOption(lz4.Block1Mb))
	case 7:
		opts = append(opts, lz4.BlockSizeOption(lz4.Block4Mb))
	default:
		return nil, fmt.Errorf("lz4: frame descriptor BD %#02x: bad block size", bd)
	}
	var hdr bytes.Buffer
	w := lz4.NewWriter(&hdr)
	if err := w.Apply(opts...); err != nil {
		return nil, err
	}
	if err := w.Flush(); err != nil { // writes the header only
		return nil, err
	}
	h := hdr.Bytes()
	if len(h) != 4+descLen+1 || !bytes.Equal(h[:4+descLen], data[:4+descLen]) {
		return nil, fmt.Errorf("lz4: unsupported frame descriptor % x", data[4:4+descLen])
	}
	fixed := bytes.Clone(data)
	fixed[4+descLen] = h[4+descLen]
	return fixed, nil
}

var (
	zstdEncodersMu sync.Mutex
	zstdEncoders   = map[int]*zstd.Encoder{} // by level; EncodeAll is safe for concurrent use
	zstdDecoders   = sync.Pool{New: func() any {
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			panic(err) // only bad options fail
		}
		return d
	}}
)

// zstdEncoder is the shared encoder of a zstd level (compression.zstd.level).
func zstdEncoder(level int) (*zstd.Encoder, error) {
	zstdEncodersMu.Lock()
	defer zstdEncodersMu.Unlock()
	if e, ok := zstdEncoders[level]; ok {
		return e, nil
	}
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, fmt.Errorf("zstd level %d: %w", level, err)
	}
	zstdEncoders[level] = e
	return e, nil
}
