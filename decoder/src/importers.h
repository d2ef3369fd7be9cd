// The importers of decoder/src, each defined beside its format's reader; importers.cc lists them.
#pragma once

#include "cupmon/decoder/importer.h"

namespace cupmon::decoder {

const Importer& CupmonFiles();        // cupmon_importer.cc
const Importer& TorchMonitorDumps();  // torch_monitor_dump.cc

}  // namespace cupmon::decoder
