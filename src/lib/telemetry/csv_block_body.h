/*
 * The CSV reader's block loop (nvidia_smi.c), written once for two mask widths: included by
 * nvidia_smi.c twice, with CSV_WIDE 0 (rows of at most 63 bytes: one 64-bit word per mask)
 * and 1 (at most 127 bytes: unsigned __int128), after the types and helpers it uses. It
 * defines CSV_BLOCK_BODY (csv_block_body64 or csv_block_body128) and leaves no macro behind.
 * Not a header of its own: include it nowhere else.
 */
#if CSV_WIDE
#define CSV_BYTES 128
#define CSV_M tm_u128
#define CSV_BLOCK_BODY csv_block_body128
#define CSV_CTZ(x) tm_ctz128(x)
#define CSV_MSB(x) tm_msb128(x)
#define CSV_POPCOUNT(x) tm_popcount128(x)
#define CSV_SPAN(a, b) ((((tm_u128)1 << (b)) - 1) & ~(((tm_u128)1 << (a)) - 1))
#else
#define CSV_BYTES 64
#define CSV_M uint64_t
#define CSV_BLOCK_BODY csv_block_body64
#define CSV_CTZ(x) ((unsigned)__builtin_ctzll(x))
#define CSV_MSB(x) (63 - (unsigned)__builtin_clzll(x))
#define CSV_POPCOUNT(x) ((unsigned)__builtin_popcountll(x))
#define CSV_SPAN(a, b) (((1ULL << (b)) - 1) & ~((1ULL << (a)) - 1)) /* bits [a, b), b < 64 */
#endif

/*
 * The block path of the CSV reader: common rows straight from the buffer, many per call
 * (see dcgmi_block in dcgmi.c). A row qualifies when the per-line path would take it
 * as a fast row with its entity in the cache: at most CSV_BYTES - 1 bytes, ncol fields,
 * none empty, the first byte not a lower-case letter, every value column an unsigned number
 * the block's conversion takes (tm_number_in) followed by nothing or by one blank and
 * exactly the header's unit. The first line that does not qualify ends the block before anything of
 * it is used; the per-line path reads it. Layout: one index column, at most one
 * timestamp, no bus id. Returns the bytes of whole rows consumed (*rows of them); on an
 * error from the collector, *err, with *rows counting the failing row too.
 */
static inline __attribute__((always_inline)) size_t
CSV_BLOCK_BODY(pfi_telemetry *tm, const char *p0, size_t avail, const csv_col *cols,
               const csv_layout *lay, size_t ncol, csv_fast_state *fs, const char *name, long line0,
               long *rows, pfi_error *err, const bool simd)
{
    const char *p = p0, *end = p0 + avail;
    /* The layout compiled once: the value columns in order, with their field, accepted
     * range and unit (at most 7 bytes, as one word with its blank); rows are at most
     * CSV_BYTES - 1 bytes, so at most CSV_BYTES / 2 fields. */
    enum { CSV_B_OTHER, CSV_B_VALUE, CSV_B_INDEX, CSV_B_TIME };
    unsigned char role[CSV_BYTES / 2];
    unsigned vulen[CSV_BYTES / 2];
    size_t vfield[CSV_BYTES / 2];
    double vlo[CSV_BYTES / 2], vhi[CSV_BYTES / 2], fv[CSV_BYTES / 2];
    uint64_t vunit[CSV_BYTES / 2], vumask[CSV_BYTES / 2];
    size_t nv = 0;
    long k = 0;
    *err = PFI_OK;
    *rows = 0;
    if (ncol > CSV_BYTES / 2 || ncol == 0 || avail == 0)
        return 0;
    bool plain = true;
    for (size_t i = 0; i < ncol; i++) {
        role[i] = i == lay->index_col && lay->n_index == 1 ? CSV_B_INDEX
                  : i == lay->time_col && lay->n_time == 1 ? CSV_B_TIME
                  : cols[i].role == COL_VALUE              ? CSV_B_VALUE
                                                           : CSV_B_OTHER;
        if (role[i] != CSV_B_VALUE)
            continue;
        const pfi_telemetry_field *fl = &tm->fields[cols[i].field];
        plain &= !(fl->kind == PFI_KIND_LIMIT_W && fl->dcgm_id == 162);
        vfield[nv] = cols[i].field;
        tm_kind_range(tm, fl->kind, &vlo[nv], &vhi[nv]);
        /* The unit as a cell writes it after its number: one blank, then the unit (as
         * one word with the blank; a unit of a blank or a comma never takes this path). */
        vulen[nv] = (unsigned)lay->ulen[i];
        if (vulen[nv] > 7 || strpbrk(cols[i].unit, " \t,") != NULL)
            return 0;
        char u8[8] = {' '};
        memcpy(u8 + 1, cols[i].unit, vulen[nv]);
        vunit[nv] = tm_load8(u8);
        vumask[nv] = ~0ULL >> (56 - 8 * vulen[nv]);
        nv++;
    }
    const unsigned n_sep = (unsigned)ncol - 1;
    const bool has_ts = lay->n_time == 1, keep_series = tm->opt.keep_series;
    tm_rows rw; /* the rows' puts with their times deferred (tm_rows_put) */
    tm_rows_init(&rw, tm, nv, plain);
    /* The last row taken the long way, as a template: a row whose bytes through its
     * newline are the template's, but for digits where the template has digits, has the
     * same masks, tokens, fields and units, and numbers of the same shape (no sign, the
     * same digit count and dot): it qualifies as the template did, and its numbers convert
     * without their checks. (The entity and the time are looked up for every row.) */
    char tb[CSV_BYTES];
    CSV_M tdig = 0, tkeep = 0; /* the template's digits; its bytes through the newline */
    unsigned tlen = 0, txa = 0, txz = 0, tta = 0, ttz = 0;
    unsigned va[CSV_BYTES / 2], vn[CSV_BYTES / 2]; /* each number: first byte, length */
    const void *vsrc[CSV_BYTES / 2];
    size_t vfd[CSV_BYTES / 2];
    CSV_M vbytes[CSV_BYTES / 2]; /* each number's bytes */
    double tfv[CSV_BYTES / 2];   /* the template's numbers */
    bool have_tmpl = false;
    while (p < end) {
        unsigned len, xa = 0, xz = 0, ta = 0, tz = 0;
        CSV_M eqm, dgm;
        if (have_tmpl && p + tlen < end) {
#if CSV_WIDE
            tm_shape128_in(simd, p, tb, tlen, &eqm, &dgm);
#else
            tm_shape64_in(simd, p, tb, &eqm, &dgm);
#endif
            if ((tkeep & ~(eqm | (tdig & dgm))) == 0) {
                for (size_t i = 0; i < nv; i++) {
                    if ((vbytes[i] & ~eqm) == 0) /* the template's number, byte for byte */
                        fv[i] = tfv[i];
                    else if (!tm_number_known_in(simd, p + va[i], vn[i], vsrc[i], vfd[i], &fv[i]))
                        goto done; /* (without simd only: it takes what the template took) */
                }
                len = tlen;
                xa = txa;
                xz = txz;
                ta = tta;
                tz = ttz;
                goto row;
            }
        }
        /* The row's first CSV_BYTES bytes classified (TM_LINE_PAD readable past end): its
         * end, its blanks and commas as bit masks. */
        CSV_M bm, nlm, cm;
#if CSV_WIDE
        tm_class128_in(simd, p, ',', &bm, &nlm, &cm);
#else
        tm_class64_in(simd, p, ',', &bm, &nlm, &cm);
#endif
        if (nlm == 0)
            break; /* (longer rows: the per-line path) */
        len = CSV_CTZ(nlm);
        if (p + len >= end)
            break;
        unsigned n = len - (len > 0 && p[len - 1] == '\r');
        CSV_M keep = ((CSV_M)1 << n) - 1;
        cm &= keep;
        CSV_M sep = (bm & keep) | cm;
        CSV_M nb = ~sep & keep;
        CSV_M first = nb & ~(nb << 1), last = nb & ~(nb >> 1); /* of each token */
        /* The first token of each field but the first: the one after a run of separators
         * holding a comma (adding the comma's bit carries through the rest of its run onto
         * the byte after it). As many of them as commas, and not the row's first token:
         * no field is empty, and a field's tokens lie between its first token and the
         * next field's. */
        CSV_M ff = (sep + cm) & first;
        if (first == 0 || CSV_POPCOUNT(cm) != n_sep || CSV_POPCOUNT(ff) != n_sep ||
            (ff & first & (0 - first)) != 0)
            break;
        char c0 = p[CSV_CTZ(first)];
        if (c0 >= 'a' && c0 <= 'z')
            break;
        /* Field by field, in order: its first token at a, the next field's at b (the
         * row's end for the last field), its last token's end at z. */
        CSV_M nexts = ff | (CSV_M)1 << n;
        unsigned a = CSV_CTZ(first);
        size_t i = 0;
        CSV_M vary = 0; /* the numbers', the index's and the time's bytes */
        for (unsigned j = 0; j < ncol; j++, nexts &= nexts - 1) {
            unsigned b = CSV_CTZ(nexts);
            unsigned z = CSV_MSB(last & (((CSV_M)1 << b) - 1)) + 1;
            if (role[j] == CSV_B_VALUE) {
                unsigned e = a + CSV_CTZ(last >> a) + 1; /* the number's end */
                if (!tm_number_shape_in(simd, p + a, e - a, &fv[i], &vsrc[i], &vfd[i]))
                    goto done;
                if (z != e && (z != e + 1 + vulen[i] || vulen[i] == 0 ||
                               ((tm_load8(p + e) ^ vunit[i]) & vumask[i]) != 0))
                    goto done; /* more than " <the header's unit>" */
                va[i] = a;
                vn[i] = e - a;
                vbytes[i] = CSV_SPAN(a, e);
                tfv[i] = fv[i];
                vary |= vbytes[i];
                i++;
            } else if (role[j] == CSV_B_INDEX) {
                xa = a;
                xz = z;
                vary |= CSV_SPAN(a, z);
            } else if (role[j] == CSV_B_TIME) {
                ta = a;
                tz = z;
                vary |= CSV_SPAN(a, z);
            }
            a = b;
        }
        /* The template from here on: this row (its entity and time are checked below;
         * a row refused there ends the block, and the template with it). */
        memcpy(tb, p, CSV_BYTES);
#if CSV_WIDE
        tm_shape128_in(simd, p, p, len, &eqm, &tdig);
#else
        tm_shape64_in(simd, p, p, &eqm, &tdig);
#endif
        tdig &= vary; /* (a digit of a unit or another column must stay as it is) */
        tkeep = ((CSV_M)2 << len) - 1;
        tlen = len;
        txa = xa;
        txz = xz;
        tta = ta;
        ttz = tz;
        have_tmpl = true;
    row:
        if (xz - xa > 16)
            break;
        span ts = {p + ta, tz - ta};
        size_t slot, ent;
        int sx = csv_small_ix(p + xa, xz - xa);
        if (sx >= 0 && fs->ix_ent[sx] != 0)
            ent = fs->ix_ent[sx] - 1;
        else if (!tm_kc_get(&fs->kc, p + xa, xz - xa, &slot, &ent))
            break;
        double tsec = 0;
        bool has_t = false;
        if (has_ts) {
            csv_fast_time(tm, fs, ts, &tsec, &has_t, simd);
            if (!has_t)
                break; /* the line path refuses it, naming the line */
        }
        pfi_telemetry_entity *en = &tm->entities[ent];
        double tt;
        if (has_t && !(tsec < en->last_t) && tsec - en->last_t <= TM_PLAUSIBLE_SPAN_S &&
            en->file_no == tm->n_files && en->shift_s == 0 &&
            isnan(en->prior_lo)) { /* tm_row_time's common case, inlined */
            en->rows++;
            if (tsec > en->last_t)
                en->last_step_s = tsec - en->last_t;
            if (tsec > en->file_hi)
                en->file_hi = tsec;
            en->last_t = tsec;
            tt = tsec;
        } else {
            tm_rows_flush(tm, &rw); /* (tm_row_time may mark the entity's series) */
            tt = tm_row_time(tm, ent, has_t, tsec, false, line0 + k + 1, name);
        }
        tm->line_now = line0 + k + 1; /* a note on a cell names it (tm_put) */
        *err = tm_rows_put(tm, &rw, ent, vfield, fv, vlo, vhi, nv, tt, plain, keep_series);
        if (*err != PFI_OK) {
            tm_rows_flush(tm, &rw);
            *rows = k + 1;
            return (size_t)(p - p0);
        }
        en = &tm->entities[ent];
        if (lay->n_value > 0 && !en->lost)
            en->last_good_t_s = tt;
        tm->n_rows++;
        p += len + 1;
        k++;
    }
done:
    tm_rows_flush(tm, &rw);
    *rows = k;
    return (size_t)(p - p0);
}

#undef CSV_BYTES
#undef CSV_M
#undef CSV_BLOCK_BODY
#undef CSV_CTZ
#undef CSV_MSB
#undef CSV_POPCOUNT
#undef CSV_SPAN
#undef CSV_WIDE
