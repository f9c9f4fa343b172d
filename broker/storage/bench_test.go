package storage

import (
	"fmt"
	"math"
	"testing"
)

// BenchmarkAppend: one single-record batch per Append on the real file system,
// with the default flush policy (the OS flushes) and with an fsync per Append.
func BenchmarkAppend(b *testing.B) {
	for _, size := range []int{100, 1024} {
		for _, flush := range []int64{DefaultFlushIntervalMessages, 1} {
			name := "flush=os"
			if flush == 1 {
				name = "flush=every-append"
			}
			b.Run(fmt.Sprintf("record=%dB/%s", size, name), func(b *testing.B) {
				l := mustOpen(b, b.TempDir(), Config{FlushIntervalMessages: flush})
				defer mustClose(b, l)
				batch := newBatch(1, values(0, 1, size)...)
				b.SetBytes(int64(len(batch)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := l.Append(batch); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkRead: reads one batch at a time at offsets spread over 10000
// single-record batches (index lookup + header scan + copy).
func BenchmarkRead(b *testing.B) {
	for _, size := range []int{100, 1024} {
		b.Run(fmt.Sprintf("record=%dB", size), func(b *testing.B) {
			l := mustOpen(b, b.TempDir(), Config{})
			defer mustClose(b, l)
			batch := newBatch(1, values(0, 1, size)...)
			const n = 10000
			for i := 0; i < n; i++ {
				mustAppend(b, l, batch)
			}
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			i := int64(0)
			for b.Loop() {
				if _, err := l.Read(i*7919%n, 1); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkSliceUpTo: where 1 MiB of a log lies (SliceUpTo, which reads only batch headers) beside
// reading it (Read, a copy), for one-record batches of 100 B (about 7,000 headers, read a window at
// a time) and for 16 KiB batches (64 headers, read one at a time). MB/s counts the bytes located.
func BenchmarkSliceUpTo(b *testing.B) {
	for _, c := range []struct {
		name          string
		records, size int
	}{{"batch=170B", 1, 100}, {"batch=16KiB", 16, 1000}} {
		l := mustOpen(b, b.TempDir(), Config{FS: OS})
		batch := newBatch(1, values(0, c.records, c.size)...)
		for total := 0; total < 2<<20; total += len(batch) {
			mustAppend(b, l, batch)
		}
		for _, how := range []string{"slice", "read"} {
			b.Run(c.name+"/"+how, func(b *testing.B) {
				b.ReportAllocs()
				var n int64
				for b.Loop() {
					if how == "read" {
						data, err := l.Read(0, 1<<20)
						if err != nil {
							b.Fatal(err)
						}
						n = int64(len(data))
						continue
					}
					s, err := l.SliceUpTo(0, 1<<20, math.MaxInt64)
					if err != nil {
						b.Fatal(err)
					}
					n = s.Size
					s.Release()
				}
				b.SetBytes(n)
			})
		}
		mustClose(b, l)
	}
}
