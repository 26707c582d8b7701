/*
 * Part of the `runloop` provider header (runloop_tp.h), included by it at every stage of
 * lttng-ust's multi-read inclusion: no include guard on purpose (the stage macros it redefines are
 * reset by <lttng/ust-tracepoint-event-reset.h> between stages). It changes nothing outside the
 * probe-writing stage.
 */
/*
 * The probe's payload writes (docs/benchmarks.md). lttng-ust's stock probe (stage 5 of
 * <lttng/ust-tracepoint-event.h>) writes each field with its own indirect ring-buffer call:
 * `event_write` per integer (~70 instructions each: the call, the context's alignment, the
 * backend-page lookup, a memcpy) and `event_strcpy` per string, which copies byte by byte
 * (~12 instructions a byte). Here the probe stage is overridden so that a whole payload goes out
 * in as few `event_write` calls as possible — for every callout event, one:
 *
 *  - LTTNG_UST_TP_FIELDS (only in that stage) opens a local staging buffer of RL_TP_STAGE_MAX
 *    bytes before the fields and writes what it holds with one `event_write` after them.
 *  - Each integer or enumeration (and float, and the length and elements of a sequence or array
 *    of numbers) is appended to it: the same `sizeof(_type)` bytes of the same `_type __tmp =
 *    (_src)` value the stock macro hands to `event_write`, at the next offset.
 *  - Each string is appended as the `len` bytes lttng-ust reserved for it (strlen + 1, measured in
 *    its size stage): at most `len - 1` bytes of the string — the bytes strlen just walked, in
 *    memory the caller still holds — then a NUL at the reserved length. That is byte for byte what
 *    `event_strcpy` writes when the string does not change during the call; if a caller's string
 *    did change meanwhile, the field still has exactly the reserved length and a terminator
 *    (lttng-ust's strcpy guarantees the same, padding with '#'). Ours never change: every name is
 *    a Swift `withCString` buffer or a literal, immutable for the call.
 *  - What does not fit in the room left is written the stock way (`event_write` of the number or
 *    array, `event_strcpy` of the string) right after what is staged has been written out, so the
 *    order of the bytes never changes; a string that fits once the staged bytes are written out is
 *    staged again. Text arrays and sequences (none in this provider) are written the stock way.
 *
 * Why the bytes are identical: with the packed ring buffer lttng-ust uses on architectures with
 * efficient unaligned access (x86, PPC: LTTNG_UST_ARCH_HAS_EFFICIENT_UNALIGNED_ACCESS, so
 * LTTNG_UST_RING_BUFFER_NATURAL_ALIGN is not defined), `lttng_ust_rb_alignof(t)` is 1 — the
 * metadata declares every field `align = 8` bits — and `lttng_ust_ring_buffer_align()` returns 0:
 * the client's `event_write` (lttng-ring-buffer-client-template.h: align the context, then
 * `lib_ring_buffer_write`) never skips a padding byte, it copies `len` bytes at the context's
 * offset and advances it by `len`, and a reserved event never straddles a sub-buffer (the backend
 * refuses writes across one). So one write of A‖B puts in the buffer exactly what the writes of A
 * then B put there, and the event's reserved size (computed by the stock size stage) is filled
 * exactly. On a natural-alignment build (padding between fields, left unwritten by the stock
 * client) only the string copy is kept, field by field, as before.
 *
 * Only the probe-writing stage is changed: the one stage where `lttng_ust__get_dynamic_len` is
 * defined (stage 5 of lttng-ust 2.13; it is #undef-ed right after, and every later stage resets
 * LTTNG_UST_TP_FIELDS through <lttng/ust-tracepoint-event-reset.h>). Field descriptors, metadata,
 * sizes and filter stacks come from the stock macros, so the schema is untouched. Any other
 * lttng-ust version uses the stock macros. The macros use the stage's own locals (`__chan`,
 * `__ctx`, `__stackvar`, `__dynamic_len_idx`), hence the version check. The staging buffer lives
 * in the probe's frame (RL_TP_STAGE_MAX bytes; hang_stack runs in a signal handler, on the
 * interrupted thread's stack).
 *
 * Tests: DirectTracepointTests.everyTracepointRecordsEveryField (every event, random values) and
 * stringFieldsDecodeExactly (tracing-scenarios names: every callout class — integers before and
 * after strings, enumerations, hex — with names of every length class: empty (passed as NULL),
 * short, UTF-8, and lengths on both sides of what the buffer holds, with one and two strings).
 */
#if defined(lttng_ust__get_dynamic_len) && LTTNG_UST_MAJOR_VERSION == 2 && LTTNG_UST_MINOR_VERSION == 13
#ifndef RL_TP_WRITERS
#define RL_TP_WRITERS
#define RL_TP_STAGE_MAX 512
#define RL_TP_STRING_COPY_MAX 256
/* Natural-alignment builds: one string field in one write of a bounded local copy. */
static inline __attribute__((always_inline)) void rl_tp_write_string(struct lttng_ust_channel_buffer *chan,
                                                                     struct lttng_ust_ring_buffer_ctx *ctx,
                                                                     const char *src, size_t len) {
    char buf[RL_TP_STRING_COPY_MAX];
    if (caa_likely(len >= 1 && len <= sizeof buf)) {
        memcpy(buf, src, len - 1);
        buf[len - 1] = '\0';
        chan->ops->event_write(ctx, buf, len, 1);
    } else {
        chan->ops->event_strcpy(ctx, src, len);
    }
}
/* Packed builds: the staging buffer. */
struct rl_tp_stage {
    size_t fill;
    char bytes[RL_TP_STAGE_MAX];
};
static inline __attribute__((always_inline)) void rl_tp_stage_flush(struct lttng_ust_channel_buffer *chan,
                                                                    struct lttng_ust_ring_buffer_ctx *ctx,
                                                                    struct rl_tp_stage *stage) {
    if (stage->fill != 0) {
        chan->ops->event_write(ctx, stage->bytes, stage->fill, 1);
        stage->fill = 0;
    }
}
/* `len` bytes of a number (or of an array of numbers), as `event_write(ctx, src, len, 1)` would write them. */
static inline __attribute__((always_inline)) void rl_tp_stage_bytes(struct lttng_ust_channel_buffer *chan,
                                                                    struct lttng_ust_ring_buffer_ctx *ctx,
                                                                    struct rl_tp_stage *stage,
                                                                    const void *src, size_t len) {
    if (len == 0) /* an empty sequence (its pointer may be NULL): lib_ring_buffer_write returns too */
        return;
    if (caa_unlikely(len > sizeof stage->bytes - stage->fill)) {
        rl_tp_stage_flush(chan, ctx, stage);
        chan->ops->event_write(ctx, src, len, 1);
        return;
    }
    memcpy(stage->bytes + stage->fill, src, len);
    stage->fill += len;
}
/* A string field of reserved length `len` (strlen + 1), as `event_strcpy(ctx, src, len)` writes it. */
static inline __attribute__((always_inline)) void rl_tp_stage_string(struct lttng_ust_channel_buffer *chan,
                                                                     struct lttng_ust_ring_buffer_ctx *ctx,
                                                                     struct rl_tp_stage *stage,
                                                                     const char *src, size_t len) {
    /* len - 1 < room, i.e. 1 <= len <= room (len 0 wraps around and never fits). */
    if (caa_unlikely(len - 1 >= sizeof stage->bytes - stage->fill)) {
        rl_tp_stage_flush(chan, ctx, stage);
        if (len - 1 >= sizeof stage->bytes) {
            chan->ops->event_strcpy(ctx, src, len);
            return;
        }
    }
    memcpy(stage->bytes + stage->fill, src, len - 1);
    stage->bytes[stage->fill + len - 1] = '\0';
    stage->fill += len;
}
#endif /* RL_TP_WRITERS */

#ifndef LTTNG_UST_RING_BUFFER_NATURAL_ALIGN
_Static_assert(lttng_ust_rb_alignof(uint64_t) == 1, "packed ring buffer: fields are never padded");

#undef LTTNG_UST_TP_FIELDS
#define LTTNG_UST_TP_FIELDS(...)                                                            \
    struct rl_tp_stage __rl_stage;                                                          \
    __rl_stage.fill = 0;                                                                    \
    __VA_ARGS__                                                                             \
    rl_tp_stage_flush(__chan, &__ctx, &__rl_stage);

#undef lttng_ust__field_integer_ext
#define lttng_ust__field_integer_ext(_type, _item, _src, _byte_order, _base, _nowrite)     \
    {                                                                                       \
        _type __tmp = (_src);                                                               \
        rl_tp_stage_bytes(__chan, &__ctx, &__rl_stage, &__tmp, sizeof(__tmp));              \
    }

#undef lttng_ust__field_float
#define lttng_ust__field_float(_type, _item, _src, _nowrite)                                \
    {                                                                                       \
        _type __tmp = (_src);                                                               \
        rl_tp_stage_bytes(__chan, &__ctx, &__rl_stage, &__tmp, sizeof(__tmp));              \
    }

#undef lttng_ust__field_array_encoded
#define lttng_ust__field_array_encoded(_type, _item, _src, _byte_order, _length,            \
            _encoding, _nowrite, _elem_type_base)                                           \
    if (lttng_ust_string_encoding_##_encoding == lttng_ust_string_encoding_none) {          \
        rl_tp_stage_bytes(__chan, &__ctx, &__rl_stage, _src, sizeof(_type) * (_length));    \
    } else {                                                                                \
        rl_tp_stage_flush(__chan, &__ctx, &__rl_stage);                                     \
        __chan->ops->event_pstrcpy_pad(&__ctx, (const char *) (_src), _length);             \
    }

#undef lttng_ust__field_sequence_encoded
#define lttng_ust__field_sequence_encoded(_type, _item, _src, _byte_order, _length_type,    \
            _src_length, _encoding, _nowrite, _elem_type_base)                              \
    {                                                                                       \
        _length_type __tmpl = __stackvar.__dynamic_len[__dynamic_len_idx];                  \
        size_t __rl_seq_len = lttng_ust__get_dynamic_len(dest);                             \
        rl_tp_stage_bytes(__chan, &__ctx, &__rl_stage, &__tmpl, sizeof(_length_type));     \
        if (lttng_ust_string_encoding_##_encoding == lttng_ust_string_encoding_none) {      \
            rl_tp_stage_bytes(__chan, &__ctx, &__rl_stage, _src, sizeof(_type) * __rl_seq_len); \
        } else {                                                                            \
            rl_tp_stage_flush(__chan, &__ctx, &__rl_stage);                                 \
            __chan->ops->event_pstrcpy_pad(&__ctx, (const char *) (_src), __rl_seq_len);    \
        }                                                                                   \
    }

#undef lttng_ust__field_string
#define lttng_ust__field_string(_item, _src, _nowrite)                                      \
    {                                                                                       \
        const char *__rl_tmp_string = ((_src) ? (_src) : LTTNG_UST__NULL_STRING);          \
        size_t __rl_string_len = lttng_ust__get_dynamic_len(dest);                          \
        rl_tp_stage_string(__chan, &__ctx, &__rl_stage, __rl_tmp_string, __rl_string_len);  \
    }

#else /* LTTNG_UST_RING_BUFFER_NATURAL_ALIGN */
#undef lttng_ust__field_string
#define lttng_ust__field_string(_item, _src, _nowrite)                                          \
    {                                                                                           \
        const char *__rl_tmp_string = ((_src) ? (_src) : LTTNG_UST__NULL_STRING);              \
        rl_tp_write_string(__chan, &__ctx, __rl_tmp_string, lttng_ust__get_dynamic_len(dest)); \
    }
#endif /* LTTNG_UST_RING_BUFFER_NATURAL_ALIGN */
#endif /* lttng-ust 2.13 probe stage */
