/*
 * btl_tca_params.c - btl tca's MCA parameters: its own (the core's table,
 * tca-btl/btl_params.h) and the common BTL ones at the core's defaults,
 * registered, then checked once Open MPI has read them.
 */
#include "btl_tca.h"

#include <stdio.h>
#include <string.h>

#include "common_tca_session.h"
#include "mca_glue/tca_mca_check.h"

#define HELP_FILE "help-btl-tca.txt"

/* Enumerations keep a pointer to their values: they live as long as the
 * component, one row per parameter of the table (a bound checked below). */
#define TCA_MAX_PARAMS 32
#define TCA_MAX_ENUM_VALUES 4
static mca_base_var_enum_value_t enum_values[TCA_MAX_PARAMS][TCA_MAX_ENUM_VALUES];

/* An own parameter of the core's table (tca-btl/btl_params.h), registered
 * into c->set at its default.  i: its row in the table. */
static void register_param(mca_btl_tca_component_t *c, const tca_btl_param_t *p, size_t i) {
    static const mca_base_var_type_t types[] = {
        [TCA_BTL_PARAM_INT] = MCA_BASE_VAR_TYPE_INT,
        [TCA_BTL_PARAM_UNSIGNED] = MCA_BASE_VAR_TYPE_UNSIGNED_INT,
        [TCA_BTL_PARAM_SIZE] = MCA_BASE_VAR_TYPE_SIZE_T,
        [TCA_BTL_PARAM_UINT32] = MCA_BASE_VAR_TYPE_UINT32_T,
    };
    mca_base_var_enum_t *e = NULL;
    if (NULL != p->names && i < TCA_MAX_PARAMS && p->name_count < TCA_MAX_ENUM_VALUES) {
        mca_base_var_enum_value_t *v = enum_values[i];
        for (int k = 0; k < p->name_count; ++k)
            v[k] = (mca_base_var_enum_value_t){k, p->names[k]};
        v[p->name_count] = (mca_base_var_enum_value_t){0, NULL};
        char enum_name[96];
        snprintf(enum_name, sizeof(enum_name), "btl_tca_%s_values", p->name);
        (void) mca_base_var_enum_create(enum_name, v, &e);
    }
    (void) mca_base_component_var_register(
        &c->super.btl_version, p->name, p->help, types[p->type], e, 0, 0,
        (mca_base_var_info_lvl_t) (OPAL_INFO_LVL_1 + p->level - 1),
        (p->flags & TCA_BTL_PARAM_ALL_EQ) ? MCA_BASE_VAR_SCOPE_ALL_EQ : MCA_BASE_VAR_SCOPE_READONLY,
        (char *) &c->set + p->offset);
    if (NULL != e)
        OBJ_RELEASE(e);
}

/* The module field behind each common BTL parameter of the core's table. */
static const struct {
    const char *name;
    size_t offset;
    int is_u32; /* else size_t (the only two widths among them) */
} base_fields[] = {
#define BASE_FIELD(n)                                                                              \
    {                                                                                              \
#n, offsetof(mca_btl_base_module_t, btl_##n),                                              \
            4 == sizeof(((mca_btl_base_module_t *) 0)->btl_##n)                                    \
    }
    BASE_FIELD(exclusivity),
    BASE_FIELD(eager_limit),
    BASE_FIELD(rndv_eager_limit),
    BASE_FIELD(max_send_size),
    BASE_FIELD(rdma_pipeline_send_length),
    BASE_FIELD(rdma_pipeline_frag_size),
    BASE_FIELD(min_rdma_pipeline_size),
    BASE_FIELD(put_limit),
    BASE_FIELD(put_alignment),
    BASE_FIELD(get_limit),
    BASE_FIELD(get_alignment),
    BASE_FIELD(latency),
    BASE_FIELD(bandwidth),
#undef BASE_FIELD
};

static uint64_t base_value(const mca_btl_base_module_t *b, size_t i) {
    const char *field = (const char *) b + base_fields[i].offset;
    return base_fields[i].is_u32 ? *(const uint32_t *) field : *(const size_t *) field;
}

int mca_btl_tca_params_register(mca_btl_tca_component_t *c, mca_btl_tca_module_t *m) {
    tca_btl_settings_defaults(&c->set);
    size_t count = 0;
    const tca_btl_param_t *params = tca_btl_params(&count);
    for (size_t i = 0; i < count; ++i)
        if (NULL != params[i].help)
            register_param(c, &params[i], i);
    /* Read-only, as Open MPI's own build facts in ompi_info: a core built
     * without -O is several times slower and nothing else would say so. */
    c->build_optimized = tca_btl_core_optimized() && tca_session_core_optimized();
    (void) mca_base_component_var_register(
        &c->super.btl_version, "build_optimized",
        "Whether btl tca's C++ core and the TCA device layer (libtca) were compiled with "
        "optimization (false: built without -O, the message path runs several times slower; "
        "rebuild with an -O level in CXXFLAGS)",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, MCA_BASE_VAR_FLAG_DEFAULT_ONLY, OPAL_INFO_LVL_4,
        MCA_BASE_VAR_SCOPE_CONSTANT, &c->build_optimized);

    /* Module defaults, then the common BTL parameters (btl_tca_eager_limit, ...).
     * btl_put must be set before mca_btl_base_param_register or it strips PUT. */
    m->super.btl_exclusivity = MCA_BTL_EXCLUSIVITY_DEFAULT;
    const int across_hosts = mca_common_tca_session_across_hosts();
    for (size_t i = 0; i < sizeof(base_fields) / sizeof(base_fields[0]); ++i) {
        const tca_btl_param_t *p = tca_btl_param_find(base_fields[i].name);
        if (NULL == p || (p->flags & TCA_BTL_PARAM_OMPI_DEFAULT))
            continue;
        const uint64_t def = tca_btl_param_default(p, across_hosts);
        char *field = (char *) &m->super + base_fields[i].offset;
        if (base_fields[i].is_u32)
            *(uint32_t *) field = (uint32_t) def;
        else
            *(size_t *) field = (size_t) def;
    }
    /* GET here only so that the base registers btl_tca_get_limit and
     * btl_tca_get_alignment (it registers them for a module with GET, and an
     * unregistered value would be ignored without a word); set_get_flags
     * decides at init whether ob1 sees GET. */
    m->super.btl_flags = MCA_BTL_FLAGS_SEND | MCA_BTL_FLAGS_PUT | MCA_BTL_FLAGS_GET;
    m->super.btl_registration_handle_size = sizeof(mca_btl_base_registration_handle_t);
    m->super.btl_put = mca_btl_tca_put;
    /* The device cannot read remote memory: get is a put request (btl_tca_get.c);
     * init advertises it as btl_tca_get_emulation says. */
    m->super.btl_get = mca_btl_tca_get;
    return mca_btl_base_param_register(&c->super.btl_version, &m->super);
}

/* One value of the core's table as Open MPI stored it: the text it came as
 * (from the environment, where mpirun --mca puts it too) is checked here,
 * the range and rules by the core.  0: help shown naming the parameter. */
static int param_valid(const tca_btl_param_t *p, uint64_t value) {
    char name[96], shown[32];
    snprintf(name, sizeof(name), "btl_tca_%s", p->name);
    if (NULL != p->names &&
        !tca_mca_check_enum(HELP_FILE, name, p->names, p->name_count, p->allowed))
        return 0;
    const int is_signed = TCA_BTL_PARAM_INT == p->type;
    const char *problem =
        NULL == p->names
            ? tca_mca_text_problem(name, is_signed, value, !(p->flags & TCA_BTL_PARAM_ADJUSTED))
            : NULL;
    if (NULL == problem)
        problem = tca_btl_param_problem(p, value);
    if (NULL == problem)
        return 1;
    if (is_signed)
        snprintf(shown, sizeof(shown), "%" PRId64, (int64_t) value);
    else
        snprintf(shown, sizeof(shown), "%" PRIu64, value);
    tca_mca_show_invalid(HELP_FILE, name, shown, problem, p->allowed);
    return 0;
}

/* Every MCA value checked after Open MPI read it (it wraps "-1" to SIZE_MAX
 * and reads "abc" as 0 without a word): an unusable one is reported with its
 * name, value and range, and btl tca is not used.  All are reported, not only
 * the first. */
bool mca_btl_tca_params_valid(mca_btl_tca_component_t *c, mca_btl_tca_module_t *m) {
    size_t count = 0;
    const tca_btl_param_t *params = tca_btl_params(&count);
    bool ok = true;
    for (size_t i = 0; i < count; ++i)
        if (NULL != params[i].help)
            ok = param_valid(&params[i], tca_btl_setting_get(&c->set, &params[i])) && ok;
    for (size_t i = 0; i < sizeof(base_fields) / sizeof(base_fields[0]); ++i) {
        const tca_btl_param_t *p = tca_btl_param_find(base_fields[i].name);
        if (NULL != p)
            ok = param_valid(p, base_value(&m->super, i)) && ok;
    }
    if (!(m->super.btl_flags & MCA_BTL_FLAGS_SEND)) {
        tca_mca_show_invalid(
            HELP_FILE, "btl_tca_flags", "(without send)", "btl tca moves every message with send",
            "flags that include 'send' (default: send,put,get; get as btl_tca_get_emulation says)");
        ok = false;
    }
    return ok;
}
