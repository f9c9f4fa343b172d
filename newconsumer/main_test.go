package newconsumer

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test's consumers, brokers and ZooKeeper clients must be gone when the tests end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
