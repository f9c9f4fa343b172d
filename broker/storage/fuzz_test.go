package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/rebalancelab/rebalancelab/internal/recordbatch"
)

// FuzzAppend: any bytes either append (and then read back exactly, offsets
// and epoch stamped, and survive a reopen) or fail with ErrCorruptRecord (or, for
// idempotent batches out of sequence, a producer-state error) and
// leave the log unchanged. Never a panic. With fixCRC the target first gives
// every batch it can delimit a correct CRC-32C, so the fuzzer gets past the
// checksum to the header and record rules.
//
//	go test ./broker/storage -run '^$' -fuzz FuzzAppend -fuzztime 60s
func FuzzAppend(f *testing.F) {
	one := newBatch(1, values(0, 2, 10)...)
	f.Add(one, false)
	f.Add(one, true)
	f.Add(append(bytes.Clone(one), newBatch(-1, values(1, 1, 0)...)...), false)
	f.Add(append(bytes.Clone(one), newBatch(-1, values(1, 1, 0)...)...), true)
	f.Add([]byte("not a record batch"), false)
	f.Add([]byte("not a record batch"), true)
	f.Add(patch(one, offMagic, func(b []byte) { b[0] = 1 }), false)
	f.Add(patch(one, offMagic, func(b []byte) { b[0] = 1 }), true)
	f.Add(one[:len(one)-1], false)
	f.Add(one[:len(one)-1], true)
	f.Add([]byte{}, false)
	f.Add([]byte{}, true)
	prior := newBatch(5, values(9, 1, 3)...)
	f.Fuzz(func(t *testing.T, data []byte, fixCRC bool) {
		if fixCRC {
			data = withFixedCRCs(data)
		}
		fs := newMemFS()
		l := mustOpen(t, "/d", Config{FS: fs})
		mustAppend(t, l, prior)
		want := stamped(prior, 0, 0)
		orig := bytes.Clone(data)
		off, err := l.Append(data)
		if !bytes.Equal(data, orig) {
			t.Fatal("Append modified its input")
		}
		if err != nil {
			// The producer-state checks refuse idempotent batches out of sequence within the append.
			refused := errors.Is(err, ErrCorruptRecord) || errors.Is(err, ErrOutOfOrderSequence) ||
				errors.Is(err, ErrInvalidProducerEpoch) || errors.Is(err, ErrInvalidTxnState) || errors.Is(err, ErrInvalidRecord)
			if !refused || off != -1 {
				t.Fatalf("Append = %d, %v; want -1, ErrCorruptRecord or a producer-state error", off, err)
			}
		} else {
			if off != 1 {
				t.Fatalf("Append at %d, want 1", off)
			}
			// The stored form: each batch's baseOffset and epoch rewritten.
			next := off
			for b := data; len(b) > 0; {
				size := logOverhead + int(binary.BigEndian.Uint32(b[offLength:]))
				want = append(want, stamped(b[:size], next, 0)...)
				next += int64(int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:]))) + 1
				b = b[size:]
			}
			if l.HighWatermark() != next {
				t.Fatalf("high watermark %d, want %d", l.HighWatermark(), next)
			}
		}
		if got := readAll(t, l); !bytes.Equal(got, want) {
			t.Fatal("log content differs")
		}
		mustClose(t, l)
		l = mustOpen(t, "/d", Config{FS: fs}) // recovery accepts exactly what Append accepted
		defer mustClose(t, l)
		if r := l.Recovery(); r.Problem != "" {
			t.Fatalf("recovery found a problem in appended data: %+v", r)
		}
		if got := readAll(t, l); !bytes.Equal(got, want) {
			t.Fatal("log content differs after reopen")
		}
	})
}

// withFixedCRCs returns data with the CRC of every batch that its length field
// delimits recomputed.
func withFixedCRCs(data []byte) []byte {
	data = bytes.Clone(data)
	for b := data; len(b) >= batchOverhead; {
		size := logOverhead + int(int32(binary.BigEndian.Uint32(b[offLength:])))
		if size < batchOverhead || size > len(b) {
			break
		}
		binary.BigEndian.PutUint32(b[offCRC:], recordbatch.Checksum(b[:size]))
		b = b[size:]
	}
	return data
}
