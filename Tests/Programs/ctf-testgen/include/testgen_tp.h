/* Tracepoint provider used only to record test and benchmark traces for CTFReader. */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER rltest

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "testgen_tp.h"

#if !defined(TESTGEN_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define TESTGEN_TP_H

#include <lttng/tracepoint.h>
#include <stdint.h>

LTTNG_UST_TRACEPOINT_ENUM(rltest, color,
    LTTNG_UST_TP_ENUM_VALUES(
        lttng_ust_field_enum_value("RED", 0)
        lttng_ust_field_enum_value("GREEN", 1)
        lttng_ust_field_enum_range("MANY", 10, 20)
        lttng_ust_field_enum_auto("NEXT")
    )
)

LTTNG_UST_TRACEPOINT_EVENT(rltest, ints,
    LTTNG_UST_TP_ARGS(int64_t, v, uint64_t, u),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(int8_t, i8, (int8_t)v)
        lttng_ust_field_integer(int16_t, i16, (int16_t)v)
        lttng_ust_field_integer(int32_t, i32, (int32_t)v)
        lttng_ust_field_integer(int64_t, i64, v)
        lttng_ust_field_integer(uint8_t, u8, (uint8_t)u)
        lttng_ust_field_integer(uint16_t, u16, (uint16_t)u)
        lttng_ust_field_integer(uint32_t, u32, (uint32_t)u)
        lttng_ust_field_integer(uint64_t, u64, u)
        lttng_ust_field_integer_hex(uint32_t, x32, (uint32_t)u)
        lttng_ust_field_integer_network(int32_t, net32, (int32_t)v)
        lttng_ust_field_integer(char, ch, (char)('a' + (u % 26)))
    )
)

LTTNG_UST_TRACEPOINT_EVENT(rltest, floats,
    LTTNG_UST_TP_ARGS(double, d),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_float(float, f, (float)d)
        lttng_ust_field_float(double, d, d)
    )
)

LTTNG_UST_TRACEPOINT_EVENT(rltest, strings,
    LTTNG_UST_TP_ARGS(const char *, s, const char *, arr, size_t, n),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_string(s, s)
        lttng_ust_field_array_text(char, arr, arr, 8)
        lttng_ust_field_sequence_text(char, seqtext, s, size_t, n)
    )
)

LTTNG_UST_TRACEPOINT_EVENT(rltest, seqs,
    LTTNG_UST_TP_ARGS(const int32_t *, a, const uint16_t *, q, unsigned int, n),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_array(int32_t, arr4, a, 4)
        lttng_ust_field_sequence(uint16_t, seq, q, unsigned int, n)
        lttng_ust_field_array_hex(uint8_t, bytes, (const uint8_t *)a, 3)
    )
)

LTTNG_UST_TRACEPOINT_EVENT(rltest, enums,
    LTTNG_UST_TP_ARGS(int, c),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_enum(rltest, color, int, color, c)
        lttng_ust_field_integer(int, raw, c)
    )
)

LTTNG_UST_TRACEPOINT_EVENT(rltest, empty,
    LTTNG_UST_TP_ARGS(void),
    LTTNG_UST_TP_FIELDS()
)

LTTNG_UST_TRACEPOINT_EVENT(rltest, tick,
    LTTNG_UST_TP_ARGS(uint64_t, seq, int32_t, tid),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, seq, seq)
        lttng_ust_field_integer(int32_t, worker, tid)
    )
)

#endif /* TESTGEN_TP_H */

#include <lttng/tracepoint-event.h>
