package lab

import (
	"reflect"
	"testing"
)

func TestParseMntr(t *testing.T) {
	out := "zk_version\t3.8.0-debian--1, built on 2022-02-25 08:49 UTC\n" +
		"zk_server_state\tleader\n" +
		"zk_avg_latency\t2.7\n" +
		"zk_znode_count\t17\n" +
		"zk_watch_count\t4\n" +
		"zk_packets_received\t123456789012\n" +
		"garbage line\n" +
		"zk_followers\t2\n"
	got := ParseMntr(out)
	want := map[string]int64{"zk_avg_latency": 2, "zk_znode_count": 17, "zk_watch_count": 4, "zk_packets_received": 123456789012, "zk_followers": 2}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseMntr = %v, want %v", got, want)
	}
	if s := ParseMntrStrings(out)["zk_server_state"]; s != "leader" {
		t.Fatalf("zk_server_state = %q", s)
	}
	if len(ParseMntr("")) != 0 {
		t.Fatal("ParseMntr(\"\") not empty")
	}
}

func TestParseWatchesByPath(t *testing.T) {
	out := "/consumers/g/ids\n\t0x100000a1b2c0000\n\t0x100000a1b2c0001\n" +
		"/brokers/ids\n\t0x100000a1b2c0001\n" +
		"/big\n\t0xff00000000000001\n"
	got := ParseWatchesByPath(out)
	want := map[string][]int64{
		"/consumers/g/ids": {0x100000a1b2c0000, 0x100000a1b2c0001},
		"/brokers/ids":     {0x100000a1b2c0001},
		"/big":             {-0x00ffffffffffffff},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseWatchesByPath = %v, want %v", got, want)
	}
	if len(ParseWatchesByPath("")) != 0 {
		t.Fatal("empty wchp output gave paths")
	}
}

func TestParseSrvrMode(t *testing.T) {
	for out, want := range map[string]string{
		"Zookeeper version: 3.8.0\nLatency min/avg/max: 0/0.0/0\nMode: follower\nNode count: 5\n": "follower",
		"Mode: standalone": "standalone",
		"This ZooKeeper instance is not currently serving requests": "",
	} {
		if got := ParseSrvrMode(out); got != want {
			t.Errorf("ParseSrvrMode(%q) = %q, want %q", out, got, want)
		}
	}
}

// KafkaSettingsSummary names the lab's heap beside Kafka's, every key that differs from Kafka's
// default with the default in brackets, keys it knows no default of as they are, and leaves out the
// per-broker wiring and keys left at their default.
func TestKafkaSettingsSummary(t *testing.T) {
	props := map[string]string{
		"broker.id": "1", "listeners": "PLAINTEXT://127.0.0.1:9092", "zookeeper.connect": "127.0.0.1:2181", "log.dirs": "/tmp/x",
		"num.io.threads": "2", "num.network.threads": "2", "num.recovery.threads.per.data.dir": "1",
		"message.max.bytes": "10485760",
	}
	got := KafkaSettingsSummary(props)
	want := "heap -Xmx512m -Xms128m [-Xmx1G -Xms1G], G1GC MaxGCPauseMillis=20, message.max.bytes=10485760, num.io.threads=2 [8], num.network.threads=2 [3]"
	if got != want {
		t.Fatalf("KafkaSettingsSummary:\n got %s\nwant %s", got, want)
	}
	// Every key the lab sets on a Kafka broker has its default known, so none is printed without it.
	for _, m := range []map[string]string{ShortTimings, KafkaSmallLabSettings, LabBrokerSettings(1)} {
		for k := range m {
			if _, ok := KafkaDefaults[k]; !ok {
				t.Errorf("lab key %s has no Kafka default in KafkaDefaults", k)
			}
		}
	}
}
