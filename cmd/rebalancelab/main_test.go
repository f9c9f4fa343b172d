package main

import (
	"testing"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

// TestMain removes the binary the CLI tests build (testutil.Binary) once they are over.
func TestMain(m *testing.M) { testutil.Main(m) }
