// Includes SpiderMonkey's public headers. SwiftPM debug builds define DEBUG,
// which the release libmozjs refuses (js-config.h), so it goes first.
#pragma once

#ifdef DEBUG
#undef DEBUG
#endif

// SpiderMonkey's own headers take offsetof of classes that are not standard
// layout (HeapAPI.h, Proxy.h): theirs to fix, not a warning of this project's.
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Winvalid-offsetof"

#include <jsapi.h>
#include <jsfriendapi.h>
#include <js/Array.h>
#include <js/CallAndConstruct.h>
#include <js/CompilationAndEvaluation.h>
#include <js/Conversions.h>
#include <js/ErrorReport.h>
#include <js/Exception.h>
#include <js/Initialization.h>
#include <js/Interrupt.h>
#include <js/MemoryMetrics.h>
#include <js/experimental/JSStencil.h>
#include <js/experimental/TypedData.h>
#include <js/JSON.h>
#include <js/Object.h>
#include <js/Principals.h>
#include <js/Promise.h>
#include <js/PropertyAndElement.h>
#include <js/SourceText.h>
#include <js/Stack.h>
#include <js/String.h>

#pragma clang diagnostic pop
