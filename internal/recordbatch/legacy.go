package recordbatch

import (
	"encoding/binary"
	"hash/crc32"
)

// AppendLegacyMessage appends one message of message format magic (0 or 1) to dst, as Kafka's
// LegacyRecord.write lays it out: offset (int64), size (int32), CRC-32 (IEEE, over what follows it),
// magic, attributes (the codec in the low three bits, bit 3 LogAppendTime for magic 1), timestamp
// (int64, magic 1 only), key and value (int32 length then bytes; nil is null, length -1).
func AppendLegacyMessage(dst []byte, magic int8, attrs byte, offset, timestamp int64, key, value []byte) []byte {
	m := make([]byte, 0, 22+len(key)+len(value))
	m = append(m, 0, 0, 0, 0, byte(magic), attrs) // CRC, filled below
	if magic == 1 {
		m = binary.BigEndian.AppendUint64(m, uint64(timestamp))
	}
	for _, b := range [][]byte{key, value} {
		if b == nil {
			m = binary.BigEndian.AppendUint32(m, ^uint32(0))
			continue
		}
		m = binary.BigEndian.AppendUint32(m, uint32(len(b)))
		m = append(m, b...)
	}
	binary.BigEndian.PutUint32(m[:4], crc32.ChecksumIEEE(m[4:]))
	dst = binary.BigEndian.AppendUint64(dst, uint64(offset))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(m)))
	return append(dst, m...)
}
