// Half of an import cycle (../import-errors.test).
import "cycle_b.fp"
