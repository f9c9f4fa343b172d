package storage

import (
	"fmt"
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
