/*  mx_gen - deterministic SIS traffic generator (see mx_gen.h).

    Times are "local seconds": seconds since 1970-01-01 00:00 on the airport's
    wall clock. The generator never converts to UTC, so nothing here depends
    on the machine's time zone; the daemon interprets them in its own zone.
*/
#include "mx_gen.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_RING          16          //  recent updates a duplicate can copy
#define S_SEQN_MAX      999999
#define S_MINUTE        60
#define S_HOUR          3600
#define S_DAY           86400

//  ---------------------------------------------------------------------
//  Tables

typedef struct {
    const char *code;
    uint32_t weight;
    bool foreign;               //  flies international routes only
    bool cargo;
    const char *reg;            //  registration pattern: # digit, @ letter
    const char *hub;            //  foreign carriers: home base
    int trml;
} s_airline_t;

static const s_airline_t s_airlines [] = {
    { "3U", 14, false, false, "B####", NULL, 1 },
    { "CA", 10, false, false, "B####", NULL, 2 },
    { "MU",  8, false, false, "B##@@", NULL, 2 },
    { "CZ",  8, false, false, "B####", NULL, 2 },
    { "HU",  5, false, false, "B####", NULL, 2 },
    { "ZH",  5, false, false, "B##@@", NULL, 2 },
    { "EU",  5, false, false, "B####", NULL, 1 },
    { "TV",  4, false, false, "B####", NULL, 1 },
    { "MF",  4, false, false, "B####", NULL, 2 },
    { "SC",  4, false, false, "B##@@", NULL, 2 },
    { "8L",  2, false, false, "B####", NULL, 1 },
    { "G5",  2, false, false, "B####", NULL, 1 },
    { "PN",  2, false, false, "B####", NULL, 1 },
    { "GS",  2, false, false, "B####", NULL, 1 },
    { "KN",  2, false, false, "B####", NULL, 2 },
    { "FM",  2, false, false, "B####", NULL, 2 },
    { "HO",  2, false, false, "B##@@", NULL, 2 },
    { "9C",  2, false, false, "B####", NULL, 1 },
    { "JD",  2, false, false, "B####", NULL, 1 },
    { "KY",  1, false, false, "B####", NULL, 1 },
    { "DR",  1, false, false, "B##@@", NULL, 1 },
    { "GJ",  1, false, false, "B####", NULL, 1 },
    { "QW",  1, false, false, "B####", NULL, 1 },
    { "Y8",  1, false, true,  "B####", NULL, 1 },
    { "O3",  1, false, true,  "B####", NULL, 1 },
    { "CX",  1, true,  false, "BL@@",   "HKG", 1 },
    { "SQ",  1, true,  false, "9VS@@",  "SIN", 1 },
    { "TG",  1, true,  false, "HSTK@",  "BKK", 1 },
    { "KE",  1, true,  false, "HL7###", "ICN", 1 },
    { "OZ",  1, true,  false, "HL8###", "ICN", 1 },
    { "NH",  1, true,  false, "JA###@", "NRT", 1 },
    { "LH",  1, true,  false, "DAI@@",  "FRA", 1 },
    { "KL",  1, true,  false, "PHB@@",  "AMS", 1 },
    { "AF",  1, true,  false, "FG@@@",  "CDG", 1 },
    { "EK",  1, true,  false, "A6E@@",  "DXB", 1 },
    { "QR",  1, true,  false, "A7B@@",  "DOH", 1 },
    { "TK",  1, true,  false, "TCJ@@",  "IST", 1 },
    { "ET",  1, true,  false, "ETA@@",  "ADD", 1 },
    { "MH",  1, true,  false, "9MM@@",  "KUL", 1 },
    { "VN",  1, true,  false, "VNA###", "SGN", 1 }
};
#define S_AIRLINES (sizeof (s_airlines) / sizeof (s_airlines [0]))

static const char *s_domestic [] = {
    "PEK", "PKX", "PVG", "SHA", "CAN", "SZX", "CTU", "TFU", "CKG", "KMG",
    "XIY", "HGH", "NKG", "WUH", "CSX", "XMN", "TAO", "DLC", "SHE", "HRB",
    "URC", "LXA", "KWE", "NNG", "HAK", "SYX", "TSN", "TYN", "HET", "LHW",
    "INC", "XNN", "FOC", "CGO", "HFE", "KHN", "NGB", "WNZ", "JJN", "KWL",
    "LJG", "JHG", "DLU", "YNT"
};
#define S_DOMESTIC (sizeof (s_domestic) / sizeof (s_domestic [0]))

static const char *s_international [] = {
    "HKG", "MFM", "TPE", "NRT", "KIX", "ICN", "BKK", "SIN", "KUL", "CGK",
    "MNL", "SGN", "HAN", "DXB", "DOH", "IST", "FRA", "MUC", "AMS", "CDG",
    "LHR", "HEL", "ADD", "SYD", "MEL", "LAX", "SFO"
};
#define S_INTERNATIONAL (sizeof (s_international) / sizeof (s_international [0]))

typedef struct {
    const char *code;
    int maxp;
    bool wide;
} s_aircraft_t;

static const s_aircraft_t s_aircraft [] = {
    { "319", 128, false }, { "320", 158, false }, { "321", 190, false },
    { "32N", 174, false }, { "32Q", 194, false }, { "733", 144, false },
    { "738", 167, false }, { "73H", 170, false }, { "7M8", 176, false },
    { "E90",  98, false }, { "332", 247, true  }, { "333", 301, true  },
    { "359", 311, true  }, { "788", 242, true  }, { "789", 290, true  },
    { "77W", 340, true  }
};
#define S_AIRCRAFT (sizeof (s_aircraft) / sizeof (s_aircraft [0]))
#define S_FREIGHTER "75F"

//  Relative traffic per hour of the day: a quiet night, two busy waves.
static const uint32_t s_hour_weight [24] = {
    2, 1, 1, 0, 0, 1, 3, 6, 8, 8, 7, 6, 6, 6, 6, 7, 7, 7, 7, 7, 6, 5, 4, 3
};

static const char *s_months [12] = {
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN",
    "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"
};

static const char *s_handlers [] = { "110009", "110012", "120003", "210045", "234523" };
static const char *s_runways [] = { "02L", "02R", "20L", "20R", "01", "19" };
static const char *s_statuses [] = {
    "SCH", "BOR", "LSC", "GCL", "DEP", "AIR", "LND", "ARR", "DLY", "ONB"
};
static const char *s_remarks [] = {
    "Bag loading Delay", "Crew change", "Catering late", "Gate change",
    "VIP on board", "航班延误 请注意广播", "请旅客耐心等待", "由于天气原因延误"
};
static const char *s_exsc [] = { "DELAY", "BOARD", "RETN", "DIVT", "HOLD" };
static const char *s_exsr [] = {
    "delay for one hour", "boarding started", "return to stand",
    "diverted by weather", "航路天气原因"
};
static const char *s_delay_codes [] = { "81", "93", "71", "41", "15", "62", "YY" };
static const char *s_delay_texts [] = {
    "AIR TRAFFIC FLOW CONTROL", "LATE INBOUND AIRCRAFT",
    "WEATHER AT DESTINATION", "TECHNICAL FAULT", "BOARDING DELAY",
    "FUELLING", "流量控制"
};
static const char *s_divert_texts [] = {
    "INCLEMENT WEATHER", "MEDICAL EMERGENCY", "RUNWAY CLOSED", "目的地机场天气原因"
};
static const char *s_return_texts [] = {
    "EXIT DOOR FAULT", "BIRD STRIKE", "PASSENGER ILLNESS", "ENGINE INDICATION"
};
static const char *s_abort_texts [] = { "POOR VISIBILITY", "WIND SHEAR", "UNSTABLE APPROACH" };
static const char *s_services [] = { "ATN", "ATL", "ACCN", "WCHR", "UMNR", "MAAS" };
static const char *s_service_codes [] = { "MACHINE", "CREW", "MAC" };
static const char *s_service_texts [] = { "machine fault", "crew late", "由于机器问题延误服务事务" };
static const char *s_classes [] = { "X", "F", "C", "Y" };

#define S_COUNT(a) (sizeof (a) / sizeof ((a) [0]))

//  FLOP subtypes: name, default weight, direction (0 = any), clearable.
//  FDEL stays last: mx_gen_subtype_name documents it so.
#define S_SUBTYPES(X) \
    X (STND, 6, 0,   1) X (TRML, 1, 0,   1) X (RUNW, 3, 0,   1) \
    X (FTSS, 6, 0,   1) X (REMC, 3, 0,   1) X (ACFT, 1, 0,   0) \
    X (RENO, 2, 0,   1) X (MAXP, 1, 0,   1) X (FLTY, 1, 0,   0) \
    X (FLIN, 1, 0,   0) X (CNCL, 1, 0,   1) X (TOBT, 6, 'D', 1) \
    X (EOBT, 5, 'D', 1) X (COBT, 3, 'D', 1) X (CTOT, 3, 'D', 1) \
    X (BOTM, 4, 'D', 1) X (LACL, 3, 'D', 1) X (FINT, 3, 'D', 1) \
    X (APPT, 2, 0,   1) X (EGSR, 2, 'D', 1) X (EGST, 2, 'D', 1) \
    X (IEST, 5, 0,   1) X (PEDT, 2, 0,   1) X (NEAT, 2, 0,   1) \
    X (PADT, 2, 0,   1) X (NAAT, 2, 0,   1) X (HNAG, 1, 0,   1) \
    X (TAOP, 1, 0,   1) X (EXSS, 2, 0,   1) X (VIPP, 1, 0,   1) \
    X (FDIV, 1, 'A', 1) X (FRET, 1, 'D', 1) X (FLAB, 1, 'A', 1) \
    X (PORT, 1, 'D', 1) X (PSDT, 4, 0,   1) X (GTDT, 5, 0,   1) \
    X (CKDT, 3, 'D', 1) X (CLDT, 3, 'A', 1) X (CHDT, 2, 'D', 1) \
    X (ABTM, 3, 0,   1) X (CHOT, 3, 0,   1) X (DELY, 3, 0,   1) \
    X (ROUT, 1, 0,   1) X (ERUT, 1, 0,   1) X (PSHT, 2, 'D', 1) \
    X (TIPT, 1, 0,   1) X (SRVT, 2, 0,   1) X (VIPF, 1, 0,   1) \
    X (FDEL, 1, 0,   0)

typedef enum {
#define S_ENUM(n, w, m, c) S_ST_##n,
    S_SUBTYPES (S_ENUM)
#undef S_ENUM
    S_ST_COUNT
} s_subtype_t;

static const struct {
    const char *name;
    uint32_t weight;
    char mvin;
    bool clearable;
} s_subtypes [] = {
#define S_ROW(n, w, m, c) { #n, w, m, c },
    S_SUBTYPES (S_ROW)
#undef S_ROW
};

//  What makes a malformed message malformed
typedef enum {
    S_DEFECT_NONE = 0,
    S_DEFECT_TRUNCATED,         //  not well-formed
    S_DEFECT_MISSING_FIELD,     //  one META field absent
    S_DEFECT_EMPTY_FIELD,       //  one META field present and empty
    S_DEFECT_DOCTYPE,           //  DOCTYPE with an entity declaration
    S_DEFECT_ROOT,              //  root is not MSG
    S_DEFECT_SEQN,              //  SEQN not a number
    S_DEFECTS
} s_defect_t;

static const char *s_meta_fields [5] = { "SNDR", "SEQN", "DTTM", "TYPE", "STYP" };
static const char *s_missing_names [5] = {
    "missing SNDR", "missing SEQN", "missing DTTM", "missing TYPE", "missing STYP"
};
static const char *s_empty_names [5] = {
    "empty SNDR", "empty SEQN", "empty DTTM", "empty TYPE", "empty STYP"
};

//  What makes a hostile message hostile
typedef enum {
    S_HOSTILE_LAUGHS = 0,       //  nested entities ("billion laughs")
    S_HOSTILE_EXTERNAL,         //  external entity naming a local file
    S_HOSTILE_DTD,              //  DOCTYPE naming an external DTD
    S_HOSTILE_PARAMETER,        //  parameter entity fetched from the network
    S_HOSTILE_OVERSIZED,        //  element text beyond the configured size
    S_HOSTILES
} s_hostile_t;

static const char *s_hostile_names [S_HOSTILES] = {
    "billion-laughs", "external-entity", "external-dtd", "parameter-entity", "oversized"
};

//  ---------------------------------------------------------------------
//  Reference lists (WIRE §7): TYPE and key element, in the spec's order.
//  The generator keeps a pool of keys per list and which of them the
//  upstream's list holds now, so ADD names new keys and UPD/DEL known ones.

#define S_LISTS(X) \
    X (GLST, GCOD) X (SLST, SCOD) X (CLST, CCOD) X (BLST, BCOD) X (CHLT, CCOD) \
    X (PLST, PCOD) X (TLST, TCOD) X (ABDG, ABCD) X (AIRC, ITAT) X (AIRL, ITOP) \
    X (ARPT, ITCD) X (CITY, ITCD) X (COUL, COUC) X (REGL, REGC) X (ABNR, ANRC) \
    X (DLYL, DCOD) X (HLTR, HLTC) X (ORGN, OGID) X (STTS, STTC) X (FLTL, FTYP) \
    X (VIPL, VPCD) X (VIPS, VSCD) X (REGN, RNUM)

typedef enum {
#define S_ENUM(n, k) S_LIST_##n,
    S_LISTS (S_ENUM)
#undef S_ENUM
    S_LIST_COUNT
} s_list_t;

static const struct {
    const char *name;
    const char *key;
} s_lists [] = {
#define S_ROW(n, k) { #n, #k },
    S_LISTS (S_ROW)
#undef S_ROW
};

typedef struct {
    bool downloaded;            //  a DNLD of the list went out
    size_t size;                //  keys in the pool
    uint8_t *present;           //  per key: the upstream's list holds it
    uint16_t *rev;              //  per key: bumped by each UPD
} s_list_state_t;

//  ICAO designators, parallel to s_airlines
static const char *s_airline_icao [] = {
    "CSC", "CCA", "CES", "CSN", "CHH", "CSZ", "UEA", "TBA", "CXA", "CDG",
    "LKE", "HXA", "CHB", "GCR", "CUA", "CSH", "DKH", "CQH", "CBJ", "KNA",
    "RLH", "CDC", "QDA", "YZR", "CSS", "CPA", "SIA", "THA", "KAL", "AAR",
    "ANA", "DLH", "KLM", "AFR", "UAE", "QTR", "THY", "ETH", "MAS", "HVN"
};

//  ICAO type designators, parallel to s_aircraft, then the freighter
static const char *s_aircraft_icao [] = {
    "A319", "A320", "A321", "A20N", "A21N", "B733", "B738", "B738", "B38M",
    "E190", "A332", "A333", "A359", "B788", "B789", "B77W", "B752"
};

//  Country of each airport of s_international
static const char *s_international_country [] = {
    "HKG", "MAC", "TWN", "JPN", "JPN", "KOR", "THA", "SGP", "MYS", "IDN",
    "PHL", "VNM", "VNM", "ARE", "QAT", "TUR", "DEU", "DEU", "NLD", "FRA",
    "GBR", "FIN", "ETH", "AUS", "AUS", "USA", "USA"
};

static const struct {
    const char *code, *name, *local, *region, *region2;
} s_countries [] = {
    { "PRC", "PEOPLES REPUBLIC OF CHINA", "中国", "ASIA", "GCHINA" },
    { "HKG", "HONG KONG SAR", "中国香港", "ASIA", "GCHINA" },
    { "MAC", "MACAO SAR", "中国澳门", "ASIA", "GCHINA" },
    { "TWN", "TAIWAN CHINA", "中国台湾", "ASIA", "GCHINA" },
    { "JPN", "JAPAN", "日本", "ASIA", NULL },
    { "KOR", "REPUBLIC OF KOREA", "韩国", "ASIA", NULL },
    { "THA", "THAILAND", "泰国", "ASIA", NULL },
    { "SGP", "SINGAPORE", "新加坡", "ASIA", NULL },
    { "MYS", "MALAYSIA", "马来西亚", "ASIA", NULL },
    { "IDN", "INDONESIA", "印度尼西亚", "ASIA", NULL },
    { "PHL", "PHILIPPINES", "菲律宾", "ASIA", NULL },
    { "VNM", "VIET NAM", "越南", "ASIA", NULL },
    { "ARE", "UNITED ARAB EMIRATES", "阿联酋", "MEAST", NULL },
    { "QAT", "QATAR", "卡塔尔", "MEAST", NULL },
    { "TUR", "TURKEY", "土耳其", "MEAST", "EUROPE" },
    { "DEU", "GERMANY", "德国", "EUROPE", NULL },
    { "NLD", "NETHERLANDS", "荷兰", "EUROPE", NULL },
    { "FRA", "FRANCE", "法国", "EUROPE", NULL },
    { "GBR", "UNITED KINGDOM", "英国", "EUROPE", NULL },
    { "FIN", "FINLAND", "芬兰", "EUROPE", NULL },
    { "ETH", "ETHIOPIA", "埃塞俄比亚", "AFRICA", NULL },
    { "AUS", "AUSTRALIA", "澳大利亚", "OCEANIA", NULL },
    { "USA", "UNITED STATES", "美国", "AMERICA", NULL }
};

static const struct {
    const char *code, *name, *local;
} s_regions [] = {
    { "ASIA", "ASIA AND ASIA PACIFIC AREA", "亚洲和太平洋" },
    { "GCHINA", "GREATER CHINA", "大中华区" },
    { "MEAST", "MIDDLE EAST", "中东" },
    { "EUROPE", "EUROPE", "欧洲" },
    { "AFRICA", "AFRICA", "非洲" },
    { "OCEANIA", "OCEANIA", "大洋洲" },
    { "AMERICA", "AMERICAS", "美洲" }
}, s_abnormal [] = {
    { "WEATHER", "Bad Weather", "坏天气" },
    { "ATC", "Air Traffic Control", "空中交通管制" },
    { "TECH", "Technical Fault", "机械故障" },
    { "CREW", "Crew Shortage", "机组原因" },
    { "PAX", "Passenger Reasons", "旅客原因" },
    { "SECURITY", "Security Check", "安全检查" },
    { "AIRPORT", "Airport Operations", "机场原因" },
    { "OTHER", "Other Reasons", "其他原因" }
}, s_vip_services [] = {
    { "LIM", "LIMOUSINE", "贵宾车" },
    { "LNG", "LOUNGE", "贵宾室" },
    { "FTK", "FAST TRACK", "快速通道" },
    { "ESC", "ESCORT", "陪同" },
    { "MAG", "MEET AND GREET", "接送机" },
    { "BAG", "BAGGAGE SERVICE", "行李服务" }
}, s_flight_types [] = {
    { "W", "SCHEDULED PASSENGER", "定期客运" },
    { "C", "CHARTER", "包机" },
    { "L", "EXTRA SECTION", "加班" },
    { "F", "FREIGHTER", "货运" },
    { "P", "POSITIONING", "调机" }
}, s_status_names [] = {
    { "SCH", "Scheduled", "计划" },
    { "BOR", "Boarding", "登机" },
    { "LSC", "Last Call", "催促登机" },
    { "GCL", "Gate Closed", "登机结束" },
    { "DEP", "Departed", "起飞" },
    { "AIR", "Airborne", "空中" },
    { "LND", "Landed", "落地" },
    { "ARR", "Arrived", "到达" },
    { "DLY", "Delayed", "延误" },
    { "ONB", "On Block", "上轮档" }
};

static const struct {
    const char *code, *alpha, *name, *local;
} s_delay_list [] = {
    { "81", "AT", "AIR TRAFFIC FLOW CONTROL", "流量控制" },
    { "93", "RA", "LATE INBOUND AIRCRAFT", "前序航班晚到" },
    { "71", "WO", "WEATHER AT DEPARTURE", "起飞机场天气" },
    { "41", "TD", "TECHNICAL FAULT", "机械故障" },
    { "15", "PD", "BOARDING DELAY", "登机延误" },
    { "62", "GF", "FUELLING", "加油" },
    { "YY", "ZZ", "OTHER", "其他" },
    { "11", "PL", "LATE CHECK-IN", "值机晚到" },
    { "21", "CD", "CARGO DOCUMENTATION", "货邮单据" },
    { "31", "GD", "AIRCRAFT DOCUMENTATION", "飞机文件" },
    { "51", "DF", "DAMAGE DURING FLIGHT", "飞行中损伤" },
    { "87", "AF", "AIRPORT FACILITIES", "机场设施" }
}, s_handling_tasks [] = {
    { "DIT", "T", "DEICE START/END TIMING", "除冰开始结束时间" },
    { "FUE", "T", "FUELLING", "加油" },
    { "CAT", "T", "CATERING", "配餐" },
    { "CLN", "T", "CABIN CLEANING", "客舱清洁" },
    { "WAT", "C", "POTABLE WATER", "清水" },
    { "LAV", "C", "LAVATORY SERVICE", "污水" },
    { "BAG", "T", "BAGGAGE LOADING", "行李装卸" },
    { "PAX", "C", "PASSENGER BUS", "旅客摆渡" }
};

static const char *s_organisations [] = {
    "110009", "110012", "120003", "210045", "234523", "310021", "320007", "410002"
};
static const char *s_org_kinds [] = { "RAMP HANDLER", "PAX HANDLER", "MAINTENANCE" };
static const char *s_first_names [] = { "Jack", "Li", "Wei", "Anna", "Chen", "Maria", "Zhang", "Tom" };
static const char *s_last_names [] = { "Smith", "Wang", "Liu", "Garcia", "Zhao", "Muller", "Huang" };

#define S_REGN_POOL 300
#define S_VIPL_POOL 50

_Static_assert (S_COUNT (s_airline_icao) == S_AIRLINES, "one ICAO code per airline");
_Static_assert (S_COUNT (s_aircraft_icao) == S_AIRCRAFT + 1, "one ICAO type per aircraft");
_Static_assert (S_COUNT (s_international_country) == S_INTERNATIONAL, "one country per airport");

//  ---------------------------------------------------------------------
//  PRNG: xoshiro256** seeded through splitmix64 (both public domain
//  algorithms by Vigna/Blackman), integer-only so results are identical
//  everywhere.

typedef struct {
    uint64_t s [4];
} s_rng_t;

static uint64_t
s_splitmix (uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void
s_rng_seed (s_rng_t *rng, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        rng->s [i] = s_splitmix (&seed);
}

static uint64_t
s_rotl (uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t
s_rng_next (s_rng_t *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = s_rotl (s [1] * 5, 7) * 9;
    uint64_t t = s [1] << 17;
    s [2] ^= s [0];
    s [3] ^= s [1];
    s [1] ^= s [2];
    s [0] ^= s [3];
    s [2] ^= t;
    s [3] = s_rotl (s [3], 45);
    return result;
}

//  Uniform in [0, n) without modulo bias (Lemire)
static uint32_t
s_below (s_rng_t *rng, uint32_t n)
{
    if (n <= 1)
        return 0;
    uint64_t m = (s_rng_next (rng) >> 32) * n;
    uint32_t low = (uint32_t) m;
    if (low < n) {
        uint32_t floor = (uint32_t) (0u - n) % n;
        while (low < floor) {
            m = (s_rng_next (rng) >> 32) * n;
            low = (uint32_t) m;
        }
    }
    return (uint32_t) (m >> 32);
}

//  Uniform in [lo, hi]
static int
s_range (s_rng_t *rng, int lo, int hi)
{
    return lo + (int) s_below (rng, (uint32_t) (hi - lo + 1));
}

static bool
s_chance (s_rng_t *rng, uint32_t ppm)
{
    return s_below (rng, 1000000) < ppm;
}

static const char *
s_pick (s_rng_t *rng, const char **table, size_t size)
{
    return table [s_below (rng, (uint32_t) size)];
}

static size_t
s_weighted (s_rng_t *rng, const uint32_t *weights, size_t size, uint64_t sum)
{
    uint64_t r = s_below (rng, (uint32_t) sum);
    for (size_t i = 0; i < size; i++) {
        if (r < weights [i])
            return i;
        r -= weights [i];
    }
    return size - 1;
}

//  ---------------------------------------------------------------------
//  Calendar (proleptic Gregorian, H. Hinnant's days_from_civil)

static int64_t
s_days_from_civil (int y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0? y: y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m > 2? m - 3: m + 9) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void
s_civil_from_days (int64_t z, int *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0? z: z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int) (doy - (153 * mp + 2) / 5 + 1);
    *m = (int) (mp < 10? mp + 3: mp - 9);
    *y = (int) (yoe + era * 400 + (*m <= 2));
}

typedef struct {
    int year, month, day, hour, minute, second;
} s_civil_t;

static s_civil_t
s_civil (int64_t t)
{
    s_civil_t c;
    int64_t days = t / S_DAY;
    int64_t rest = t % S_DAY;
    if (rest < 0) {
        rest += S_DAY;
        days--;
    }
    s_civil_from_days (days, &c.year, &c.month, &c.day);
    c.hour = (int) (rest / S_HOUR);
    c.minute = (int) (rest % S_HOUR / S_MINUTE);
    c.second = (int) (rest % S_MINUTE);
    return c;
}

//  Body date-time ddMONyyHHmm
static void
s_fmt_body (int64_t t, char out [12])
{
    s_civil_t c = s_civil (t);
    snprintf (out, 12, "%02d%s%02d%02d%02d",
              c.day, s_months [c.month - 1], c.year % 100, c.hour, c.minute);
}

//  Body date ddMONyy
static void
s_fmt_date (int64_t t, char out [8])
{
    s_civil_t c = s_civil (t);
    snprintf (out, 8, "%02d%s%02d", c.day, s_months [c.month - 1], c.year % 100);
}

//  META DTTM yyyyMMddHHmmss
static void
s_fmt_dttm (int64_t t, char out [15])
{
    s_civil_t c = s_civil (t);
    snprintf (out, 15, "%04d%02d%02d%02d%02d%02d",
              c.year, c.month, c.day, c.hour, c.minute, c.second);
}

//  "YYYY-MM-DD" → local seconds of its midnight; -1 if not a valid date in
//  2001..2098 (two-digit body years must stay unambiguous around the day).
static int64_t
s_parse_day (const char *text)
{
    if (!text || strlen (text) != 10 || text [4] != '-' || text [7] != '-')
        return -1;
    for (int i = 0; i < 10; i++)
        if (i != 4 && i != 7 && (text [i] < '0' || text [i] > '9'))
            return -1;
    int y = atoi (text);
    int m = atoi (text + 5);
    int d = atoi (text + 8);
    if (y < 2001 || y > 2098 || m < 1 || m > 12 || d < 1 || d > 31)
        return -1;
    int64_t days = s_days_from_civil (y, m, d);
    int yy, mm, dd;
    s_civil_from_days (days, &yy, &mm, &dd);
    if (yy != y || mm != m || dd != d)
        return -1;              //  e.g. 2021-02-30
    return days * S_DAY;
}

//  ---------------------------------------------------------------------
//  Growing text buffer; running out of memory ends the process, like czmq.

typedef struct {
    char *data;
    size_t len;
    size_t cap;
} s_buf_t;

static void *
s_alloc (size_t size)
{
    void *mem = calloc (1, size? size: 1);
    if (!mem) {
        fprintf (stderr, "mx_gen: out of memory\n");
        abort ();
    }
    return mem;
}

static void
s_reserve (s_buf_t *buf, size_t more)
{
    if (buf->len + more + 1 <= buf->cap)
        return;
    size_t cap = buf->cap? buf->cap: 4096;
    while (cap < buf->len + more + 1)
        cap *= 2;
    char *data = realloc (buf->data, cap);
    if (!data) {
        fprintf (stderr, "mx_gen: out of memory\n");
        abort ();
    }
    buf->data = data;
    buf->cap = cap;
}

static void s_put (s_buf_t *buf, const char *format, ...)
    __attribute__ ((format (printf, 2, 3)));

static void
s_put (s_buf_t *buf, const char *format, ...)
{
    va_list args;
    va_start (args, format);
    va_list copy;
    va_copy (copy, args);
    int size = vsnprintf (NULL, 0, format, copy);
    va_end (copy);
    if (size > 0) {
        s_reserve (buf, (size_t) size);
        vsnprintf (buf->data + buf->len, (size_t) size + 1, format, args);
        buf->len += (size_t) size;
    }
    va_end (args);
}

//  Hand the text over to the caller and reset the buffer
static char *
s_take (s_buf_t *buf)
{
    s_reserve (buf, 0);
    char *text = buf->data;
    text [buf->len] = 0;
    buf->data = NULL;
    buf->len = buf->cap = 0;
    return text;
}

static char *
s_strdup (const char *text)
{
    size_t size = strlen (text) + 1;
    char *copy = s_alloc (size);
    memcpy (copy, text, size);
    return copy;
}

//  ---------------------------------------------------------------------
//  The day's flights

typedef struct {
    int64_t flid;
    int64_t sodt;               //  local seconds
    size_t airline;
    int number;
    char mvin;                  //  'A' | 'D'
    char flin;                  //  'D' | 'I' | 'M'
    const char *flty;
    const char *acft;
    int maxp;                   //  0 = freighter, no MAXP
    char reno [12];
    int trml;
    int stand;
    int gate;
    const char *other;          //  origin (A) or destination (D)
    const char *via;            //  intermediate stop or NULL
    int block1, block2;         //  leg times in minutes
    long partner;               //  index of the turnaround flight, -1 none
    const char *handler;        //  handling agent (PHAG, FHAG, MHAG)
    bool deleted;               //  an FDEL was generated for it
} s_flight_t;

struct _mx_gen_t {
    mx_gen_options_t opts;
    char day [11];
    char sender [9];
    char airport [4];
    int64_t day0;               //  local seconds of the operation day's 00:00
    s_rng_t rng;                //  the message stream
    s_flight_t *flights;
    size_t nflights;
    size_t *order;              //  flight indices by SODT
    uint32_t weights [S_ST_COUNT];
    uint64_t weight_sum;
    size_t schedule_msgs;
    size_t total;
    size_t produced;
    size_t next_fltr;           //  position in order of the next FLTR
    uint32_t seqn;              //  next SEQN
    int64_t clock_ms;           //  simulated send time, local milliseconds
    int64_t step_ms;            //  average gap between updates
    size_t counts [MX_GEN_KINDS];
    mx_gen_meta_t meta;
    bool have_meta;
    char *ring [S_RING];
    mx_gen_meta_t ring_meta [S_RING];
    size_t ring_len;
    size_t ring_next;
    size_t flights_cap;         //  room in flights and order
    int64_t next_flid;          //  FLID of the next ad-hoc flight
    s_list_state_t lists [S_LIST_COUNT];
    bool list_on [S_LIST_COUNT];
    size_t lists_on;
    s_rng_t hole_rng;           //  the mailbox ID sequence, apart from the texts
    uint64_t next_slot;
    uint64_t holes;
    size_t late;
};

static void
s_registration (s_rng_t *rng, const char *pattern, char *out, size_t size)
{
    size_t i = 0;
    for (; pattern [i] && i + 1 < size; i++) {
        if (pattern [i] == '#')
            out [i] = (char) ('0' + s_below (rng, 10));
        else
        if (pattern [i] == '@')
            out [i] = (char) ('A' + s_below (rng, 26));
        else
            out [i] = pattern [i];
    }
    out [i] = 0;
}

static const char *
s_airport_other (s_rng_t *rng, const char **table, size_t size, const char *home)
{
    const char *code = s_pick (rng, table, size);
    while (strcmp (code, home) == 0)
        code = s_pick (rng, table, size);
    return code;
}

//  Minute of the day for a movement, following the hourly traffic shape
static int
s_minute_of_day (s_rng_t *rng)
{
    uint64_t sum = 0;
    for (int h = 0; h < 24; h++)
        sum += s_hour_weight [h];
    int hour = (int) s_weighted (rng, s_hour_weight, 24, sum);
    return hour * 60 + 5 * s_range (rng, 0, 11);
}

//  Fill the parts of a flight shared by both legs of a turnaround
static void
s_flight_base (mx_gen_t *self, s_rng_t *rng, s_flight_t *f, size_t airline)
{
    const s_airline_t *al = &s_airlines [airline];
    f->airline = airline;
    f->partner = -1;
    f->trml = al->trml;
    f->handler = s_pick (rng, s_handlers, S_COUNT (s_handlers));
    f->via = NULL;
    bool intl;
    if (al->foreign) {
        intl = true;
        f->other = s_chance (rng, 700000) && strcmp (al->hub, self->airport) != 0
                 ? al->hub
                 : s_airport_other (rng, s_international, S_INTERNATIONAL, self->airport);
    }
    else {
        intl = s_chance (rng, 80000);
        f->other = intl
                 ? s_airport_other (rng, s_international, S_INTERNATIONAL, self->airport)
                 : s_airport_other (rng, s_domestic, S_DOMESTIC, self->airport);
        if (s_chance (rng, 80000)) {
            f->via = s_airport_other (rng, s_domestic, S_DOMESTIC, self->airport);
            if (strcmp (f->via, f->other) == 0)
                f->via = NULL;
        }
    }
    f->flin = intl? (f->via? 'M': 'I'): 'D';
    f->block1 = intl? 5 * s_range (rng, 30, 130): 5 * s_range (rng, 16, 44);
    f->block2 = 5 * s_range (rng, 16, 44);
    if (al->cargo) {
        f->acft = S_FREIGHTER;
        f->maxp = 0;
        f->flty = "F";
    }
    else {
        bool wide = intl? s_chance (rng, 700000): s_chance (rng, 120000);
        size_t index;
        do
            index = s_below (rng, S_AIRCRAFT);
        while (s_aircraft [index].wide != wide);
        f->acft = s_aircraft [index].code;
        f->maxp = s_aircraft [index].maxp;
        uint32_t r = s_below (rng, 100);
        f->flty = r < 90? "W": r < 96? "C": "L";
    }
    s_registration (rng, al->reg, f->reno, sizeof (f->reno));
    f->stand = s_chance (rng, 300000)
             ? 500 + s_range (rng, 1, 60)
             : f->trml * 100 + s_range (rng, 1, 60);
    f->gate = s_range (rng, 1, 60);
}

static int
s_order_compare (const void *a, const void *b, void *arg)
{
    const s_flight_t *flights = arg;
    size_t ia = *(const size_t *) a;
    size_t ib = *(const size_t *) b;
    if (flights [ia].sodt != flights [ib].sodt)
        return flights [ia].sodt < flights [ib].sodt? -1: 1;
    return ia < ib? -1: ia > ib;
}

static void
s_build_day (mx_gen_t *self)
{
    s_rng_t rng;
    s_rng_seed (&rng, self->opts.seed ^ 0x5eedda7a5eedda7aULL);
    size_t n = self->nflights;
    self->flights = s_alloc (n * sizeof (s_flight_t));
    self->order = s_alloc (n * sizeof (size_t));

    uint32_t airline_weight [S_AIRLINES];
    uint64_t airline_sum = 0;
    for (size_t i = 0; i < S_AIRLINES; i++) {
        airline_weight [i] = s_airlines [i].weight;
        airline_sum += airline_weight [i];
    }
    int next_number [S_AIRLINES];
    for (size_t i = 0; i < S_AIRLINES; i++)
        next_number [i] = s_airlines [i].foreign
                        ? 2 * s_range (&rng, 50, 350) + 1
                        : 2 * s_range (&rng, 500, 3900) + 1;

    size_t count = 0;
    while (count < n) {
        size_t airline = s_weighted (&rng, airline_weight, S_AIRLINES, airline_sum);
        int number = next_number [airline];
        int limit = s_airlines [airline].foreign? 997: 9997;
        next_number [airline] = number + 2 > limit? (limit > 997? 1001: 101): number + 2;

        s_flight_t *f = &self->flights [count];
        s_flight_base (self, &rng, f, airline);
        bool pair = n - count >= 2 && s_chance (&rng, 850000);
        int minute = s_minute_of_day (&rng);
        if (pair) {
            int turn = 45 + 5 * s_range (&rng, 0, 21);
            if (minute + turn > 23 * 60 + 55)
                pair = false;
            else {
                //  Arrival, then the same aircraft out again from the same stand
                f->mvin = 'A';
                f->number = number + 1;
                f->sodt = self->day0 + (int64_t) minute * S_MINUTE;
                s_flight_t *d = &self->flights [count + 1];
                *d = *f;
                d->mvin = 'D';
                d->number = number;
                d->sodt = f->sodt + (int64_t) turn * S_MINUTE;
                if (f->flin == 'D' && !f->via && s_chance (&rng, 300000))
                    //  Different destination on the way out
                    d->other = s_airport_other (&rng, s_domestic, S_DOMESTIC, self->airport);
                f->partner = (long) count + 1;
                d->partner = (long) count;
                count += 2;
                continue;
            }
        }
        f->mvin = s_chance (&rng, 500000)? 'A': 'D';
        f->number = f->mvin == 'A'? number + 1: number;
        f->sodt = self->day0 + (int64_t) minute * S_MINUTE;
        count++;
    }
    for (size_t i = 0; i < n; i++)
        self->order [i] = i;
    //  Keys are unique (SODT, index), so the order does not depend on qsort
    qsort_r (self->order, n, sizeof (size_t), s_order_compare, self->flights);
    for (size_t i = 0; i < n; i++)
        self->flights [self->order [i]].flid = self->opts.first_flid + (int64_t) i;
}

static void
s_flno (const s_flight_t *f, char *out, size_t size)
{
    const s_airline_t *al = &s_airlines [f->airline];
    if (al->foreign)
        snprintf (out, size, "%s%03d", al->code, f->number);
    else
        snprintf (out, size, "%s%04d", al->code, f->number);
}

//  ---------------------------------------------------------------------
//  Rendering helpers

static const char s_tabs [] = "\t\t\t\t\t\t\t\t";

//  Attribute, now and then in the real upstream's `NAME = "v"` spacing
static void
s_attr (mx_gen_t *self, s_buf_t *buf, const char *name, const char *value)
{
    if (s_chance (&self->rng, 100000))
        s_put (buf, " %s = \"%s\"", name, value);
    else
        s_put (buf, " %s=\"%s\"", name, value);
}

static void
s_open (s_buf_t *buf, int depth, const char *name)
{
    s_put (buf, "%.*s<%s>\n", depth, s_tabs, name);
}

static void
s_open_numbered (mx_gen_t *self, s_buf_t *buf, int depth, const char *name,
                 const char *attr, int number)
{
    char text [16];
    snprintf (text, sizeof (text), "%d", number);
    s_put (buf, "%.*s<%s", depth, s_tabs, name);
    s_attr (self, buf, attr, text);
    s_put (buf, ">\n");
}

static void
s_close (s_buf_t *buf, int depth, const char *name)
{
    s_put (buf, "%.*s</%s>\n", depth, s_tabs, name);
}

static void
s_text (s_buf_t *buf, int depth, const char *name, const char *value)
{
    s_put (buf, "%.*s<%s>%s</%s>\n", depth, s_tabs, name, value, name);
}

static void
s_int (s_buf_t *buf, int depth, const char *name, int64_t value)
{
    s_put (buf, "%.*s<%s>%lld</%s>\n", depth, s_tabs, name, (long long) value, name);
}

static void
s_time (s_buf_t *buf, int depth, const char *name, int64_t t)
{
    char text [12];
    s_fmt_body (t, text);
    s_text (buf, depth, name, text);
}

//  Present and empty: both spellings occur upstream
static void
s_empty (mx_gen_t *self, s_buf_t *buf, int depth, const char *name)
{
    if (s_chance (&self->rng, 250000))
        s_put (buf, "%.*s<%s/>\n", depth, s_tabs, name);
    else
        s_put (buf, "%.*s<%s></%s>\n", depth, s_tabs, name, name);
}

static void
s_stand_code (int stand, char *out, size_t size)
{
    snprintf (out, size, "%d", stand);
}

//  Route points ROUT/ERUT of a flight; ERUT also lists the home airport
static void
s_route (mx_gen_t *self, s_buf_t *buf, int depth, const s_flight_t *f,
         const char *tag, bool with_home)
{
    const char *points [3];
    int64_t arrive [3], depart [3];
    int count = 0;
    int64_t b1 = (int64_t) f->block1 * S_MINUTE;
    int64_t b2 = (int64_t) f->block2 * S_MINUTE;
    int64_t ground = 50 * S_MINUTE;
    if (f->mvin == 'D') {
        if (with_home) {
            points [count] = self->airport;
            arrive [count] = -1;
            depart [count++] = f->sodt;
        }
        if (f->via) {
            points [count] = f->via;
            arrive [count] = f->sodt + b2;
            depart [count++] = f->sodt + b2 + ground;
            points [count] = f->other;
            arrive [count] = f->sodt + b2 + ground + b1;
            depart [count++] = -1;
        }
        else {
            points [count] = f->other;
            arrive [count] = f->sodt + b1;
            depart [count++] = -1;
        }
    }
    else {
        if (f->via) {
            points [count] = f->other;
            arrive [count] = -1;
            depart [count++] = f->sodt - b2 - ground - b1;
            points [count] = f->via;
            arrive [count] = f->sodt - b2 - ground;
            depart [count++] = f->sodt - b2;
        }
        else {
            points [count] = f->other;
            arrive [count] = -1;
            depart [count++] = f->sodt - b1;
        }
        if (with_home) {
            points [count] = self->airport;
            arrive [count] = f->sodt;
            depart [count++] = -1;
        }
    }
    for (int i = 0; i < count; i++) {
        s_open_numbered (self, buf, depth, tag, "RTNO", i + 1);
        s_text (buf, depth + 1, "APCD", points [i]);
        if (arrive [i] >= 0)
            s_time (buf, depth + 1, "SCAT", arrive [i]);
        if (depart [i] >= 0)
            s_time (buf, depth + 1, "SCDT", depart [i]);
        s_close (buf, depth, tag);
    }
}

//  Stand occupation window of a flight (turnaround: arrival to departure)
static void
s_stand_window (mx_gen_t *self, const s_flight_t *f, int64_t *start, int64_t *end)
{
    if (f->partner >= 0) {
        const s_flight_t *p = &self->flights [f->partner];
        const s_flight_t *arr = f->mvin == 'A'? f: p;
        const s_flight_t *dep = f->mvin == 'A'? p: f;
        *start = arr->sodt + 5 * S_MINUTE;
        *end = dep->sodt;
    }
    else
    if (f->mvin == 'A') {
        *start = f->sodt + 5 * S_MINUTE;
        *end = f->sodt + 70 * S_MINUTE;
    }
    else {
        *start = f->sodt - 90 * S_MINUTE;
        *end = f->sodt;
    }
}

static void
s_ffid (const s_flight_t *f, char *out, size_t size)
{
    char flno [12], sodt [12];
    s_flno (f, flno, sizeof (flno));
    s_fmt_body (f->sodt, sodt);
    snprintf (out, size, "%s-%s-%c-%s-%c",
              s_airlines [f->airline].code, flno, f->mvin, sodt, f->flin);
}

//  ---------------------------------------------------------------------
//  Envelope

static uint32_t
s_take_seqn (mx_gen_t *self)
{
    uint32_t seqn = self->seqn;
    self->seqn = seqn >= S_SEQN_MAX? 1: seqn + 1;
    return seqn;
}

//  Start a message: META from self->meta, deformed as defect says, with
//  doctype (if not NULL) before the root
static void
s_envelope_start (mx_gen_t *self, s_buf_t *buf, s_defect_t defect, int field,
                  const char *doctype)
{
    s_put (buf, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    if (defect == S_DEFECT_DOCTYPE)
        s_put (buf, "<!DOCTYPE MSG [\n<!ENTITY remark \"entity text\">\n]>\n");
    if (doctype)
        s_put (buf, "%s", doctype);
    const char *root = defect == S_DEFECT_ROOT? "MESSAGE": "MSG";
    if (s_chance (&self->rng, 200000))
        s_put (buf, "<%s xmlns:xsi = \"http://www.w3.org/2001/XMLSchema-instance\""
                    " xsi:noNamespaceSchemaLocation = \"unisysaodbsis.xsd\">\n", root);
    else
        s_put (buf, "<%s xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\""
                    " xsi:noNamespaceSchemaLocation=\"unisysaodbsis.xsd\">\n", root);

    char seqn [16];
    if (defect == S_DEFECT_SEQN)
        snprintf (seqn, sizeof (seqn), "%03uA%02u",
                  self->meta.seqn / 1000 % 1000, self->meta.seqn % 100);
    else
        snprintf (seqn, sizeof (seqn), "%06u", self->meta.seqn);
    const char *values [5] = {
        self->meta.sndr, seqn, self->meta.dttm, self->meta.type, self->meta.styp
    };
    s_open (buf, 1, "META");
    for (int i = 0; i < 5; i++) {
        if (i == field && defect == S_DEFECT_MISSING_FIELD)
            continue;
        if (i == field && defect == S_DEFECT_EMPTY_FIELD)
            s_empty (self, buf, 2, s_meta_fields [i]);
        else
            s_text (buf, 2, s_meta_fields [i], values [i]);
    }
    s_close (buf, 1, "META");
}

static void
s_envelope_open (mx_gen_t *self, s_buf_t *buf, s_defect_t defect, int field)
{
    s_envelope_start (self, buf, defect, field, NULL);
}

static void
s_envelope_close (s_buf_t *buf, s_defect_t defect)
{
    s_put (buf, "</%s>\n", defect == S_DEFECT_ROOT? "MESSAGE": "MSG");
}

static void
s_meta_set (mx_gen_t *self, const char *type, const char *styp, int64_t flid,
            int64_t sent)
{
    memset (&self->meta, 0, sizeof (self->meta));
    snprintf (self->meta.sndr, sizeof (self->meta.sndr), "%s", self->sender);
    snprintf (self->meta.type, sizeof (self->meta.type), "%s", type);
    snprintf (self->meta.styp, sizeof (self->meta.styp), "%s", styp);
    self->meta.seqn = s_take_seqn (self);
    s_fmt_dttm (sent, self->meta.dttm);
    self->meta.flid = flid;
    self->meta.defect = NULL;
    self->have_meta = true;
}

//  ---------------------------------------------------------------------
//  Schedule

static void
s_fltr (mx_gen_t *self, s_buf_t *buf, const s_flight_t *f)
{
    const int d = 3;
    char flno [12], stand [8], text [16];
    s_flno (f, flno, sizeof (flno));
    s_stand_code (f->stand, stand, sizeof (stand));
    const s_airline_t *al = &s_airlines [f->airline];

    s_open (buf, 2, "FLTR");
    s_int (buf, d, "FLID", f->flid);
    s_text (buf, d, "ALCD", al->code);
    s_text (buf, d, "FLNO", flno);
    s_put (buf, "%.*s<MVIN>%c</MVIN>\n", d, s_tabs, f->mvin);
    s_time (buf, d, "SODT", f->sodt);
    s_text (buf, d, "FLTY", f->flty);
    s_put (buf, "%.*s<FLIN>%c</FLIN>\n", d, s_tabs, f->flin);
    s_route (self, buf, d, f, "ROUT", false);
    s_text (buf, d, "ACFT", f->acft);
    s_text (buf, d, "RENO", f->reno);
    if (f->partner >= 0) {
        const s_flight_t *p = &self->flights [f->partner];
        char pflno [12];
        s_flno (p, pflno, sizeof (pflno));
        s_text (buf, d, "TAOP", s_airlines [p->airline].code);
        s_text (buf, d, "TAFL", pflno);
        s_int (buf, d, "TAID", p->flid);
    }
    snprintf (text, sizeof (text), "T%d", f->trml);
    s_text (buf, d, "TRML", text);
    if (f->maxp > 0)
        s_int (buf, d, "MAXP", f->maxp);
    s_text (buf, d, "STND", stand);
    int64_t start, end;
    s_stand_window (self, f, &start, &end);
    s_open_numbered (self, buf, d, "PSDT", "PSNO", 1);
    s_text (buf, d + 1, "PSST", stand);
    s_time (buf, d + 1, "STST", start);
    s_time (buf, d + 1, "STET", end);
    s_close (buf, d, "PSDT");
    if (f->mvin == 'D') {
        snprintf (text, sizeof (text), "G%d", f->gate);
        s_open_numbered (self, buf, d, "GTDT", "GTNO", 1);
        s_text (buf, d + 1, "GATE", text);
        s_time (buf, d + 1, "PGOT", f->sodt - 50 * S_MINUTE);
        s_time (buf, d + 1, "PGCT", f->sodt - 15 * S_MINUTE);
        s_put (buf, "%.*s<GTYP>%c</GTYP>\n", d + 1, s_tabs, f->flin == 'D'? 'D': 'I');
        s_close (buf, d, "GTDT");
    }
    s_text (buf, d, "PHAG", f->handler);
    s_text (buf, d, "FHAG", f->handler);
    s_text (buf, d, "MHAG", f->handler);
    s_route (self, buf, d, f, "ERUT", true);
    s_text (buf, d, "FTSS", "SCH");
    s_close (buf, 2, "FLTR");
}

static char *
s_schedule_message (mx_gen_t *self)
{
    size_t left = self->nflights - self->next_fltr;
    size_t recs = self->opts.per_message && self->opts.per_message < left
                ? self->opts.per_message: left;
    //  The day's schedule goes out the evening before, within two hours
    int64_t gap_ms = 7000000 / (int64_t) self->schedule_msgs;
    if (gap_ms > 2000)
        gap_ms = 2000;
    int64_t sent = self->day0 - 2 * S_HOUR + (int64_t) self->produced * gap_ms / 1000;
    s_meta_set (self, "SCHD", "DNLD", 0, sent);
    s_buf_t buf = { 0 };
    s_envelope_open (self, &buf, S_DEFECT_NONE, -1);
    s_open (&buf, 1, "SCHD");
    s_put (&buf, "\t\t<RECS>%zu</RECS>\n", recs);
    for (size_t i = 0; i < recs; i++)
        s_fltr (self, &buf, &self->flights [self->order [self->next_fltr++]]);
    s_close (&buf, 1, "SCHD");
    s_envelope_close (&buf, S_DEFECT_NONE);
    return s_take (&buf);
}

//  ---------------------------------------------------------------------
//  Operational updates

//  A live flight near the simulated time, of direction mvin if it matters
static s_flight_t *
s_pick_flight (mx_gen_t *self, char mvin)
{
    int64_t now = self->clock_ms / 1000;
    int64_t from = now - S_HOUR;
    int64_t to = now + 4 * S_HOUR;
    //  First flight with SODT >= from, first with SODT > to
    size_t a = 0, b = self->nflights;
    while (a < b) {
        size_t mid = (a + b) / 2;
        if (self->flights [self->order [mid]].sodt < from)
            a = mid + 1;
        else
            b = mid;
    }
    size_t lo = a;
    b = self->nflights;
    while (a < b) {
        size_t mid = (a + b) / 2;
        if (self->flights [self->order [mid]].sodt <= to)
            a = mid + 1;
        else
            b = mid;
    }
    size_t hi = a;
    if (lo >= hi) {
        lo = 0;
        hi = self->nflights;
    }
    s_flight_t *f = NULL;
    for (int tries = 0; tries < 12; tries++) {
        f = &self->flights [self->order [lo + s_below (&self->rng, (uint32_t) (hi - lo))]];
        if (!f->deleted && (!mvin || f->mvin == mvin))
            break;
    }
    return f;
}

//  Time near SODT, minutes in [lo, hi] on a 1-minute grid
static int64_t
s_near (mx_gen_t *self, const s_flight_t *f, int lo, int hi)
{
    return f->sodt + (int64_t) s_range (&self->rng, lo, hi) * S_MINUTE;
}

//  Offsets (minutes from SODT) for the single time subtypes
static bool
s_time_window (s_subtype_t st, int *lo, int *hi)
{
    switch (st) {
        case S_ST_TOBT: *lo = -10; *hi = 60;  return true;
        case S_ST_EOBT: *lo = -5;  *hi = 90;  return true;
        case S_ST_COBT: *lo = 0;   *hi = 120; return true;
        case S_ST_CTOT: *lo = 10;  *hi = 140; return true;
        case S_ST_BOTM: *lo = -45; *hi = -25; return true;
        case S_ST_LACL: *lo = -20; *hi = -10; return true;
        case S_ST_FINT: *lo = -10; *hi = -3;  return true;
        case S_ST_APPT: *lo = -10; *hi = 30;  return true;
        case S_ST_EGSR: *lo = -2;  *hi = 30;  return true;
        case S_ST_EGST: *lo = 0;   *hi = 35;  return true;
        case S_ST_IEST: *lo = -30; *hi = 90;  return true;
        case S_ST_PEDT:
        case S_ST_NEAT:
        case S_ST_PADT:
        case S_ST_NAAT: *lo = -20; *hi = 60;  return true;
        default:
            return false;
    }
}

//  The element(s) of a FLOP, cleared (present and empty) if clear
static void
s_flop_body (mx_gen_t *self, s_buf_t *buf, s_flight_t *f, s_subtype_t st,
             bool clear, bool entity)
{
    const int d = 2;
    const char *name = s_subtypes [st].name;
    s_rng_t *rng = &self->rng;
    char text [32];
    int lo, hi;

    if (entity) {
        //  Malformed on purpose: the value refers to the DOCTYPE's entity
        s_text (buf, d, "REMC", "&remark;");
        return;
    }
    if (clear) {
        switch (st) {
            case S_ST_HNAG:
                s_empty (self, buf, d, "FHAG");
                s_empty (self, buf, d, "PHAG");
                s_empty (self, buf, d, "MHAG");
                break;
            case S_ST_TAOP:
                s_empty (self, buf, d, "TAOP");
                s_empty (self, buf, d, "TAFL");
                s_empty (self, buf, d, "TAID");
                break;
            case S_ST_EXSS:
                s_empty (self, buf, d, "EXSC");
                s_empty (self, buf, d, "EXSR");
                break;
            case S_ST_VIPP:
                s_empty (self, buf, d, "VIPP");
                s_empty (self, buf, d, "VIPR");
                break;
            default:
                s_empty (self, buf, d, name);
        }
        return;
    }
    if (s_time_window (st, &lo, &hi)) {
        s_time (buf, d, name, s_near (self, f, lo, hi));
        return;
    }
    switch (st) {
        case S_ST_STND:
            f->stand = s_chance (rng, 300000)
                     ? 500 + s_range (rng, 1, 60)
                     : f->trml * 100 + s_range (rng, 1, 60);
            s_stand_code (f->stand, text, sizeof (text));
            s_text (buf, d, name, text);
            break;
        case S_ST_TRML:
            snprintf (text, sizeof (text), "T%d", s_range (rng, 1, 2));
            s_text (buf, d, name, text);
            break;
        case S_ST_RUNW:
            s_text (buf, d, name, s_pick (rng, s_runways, S_COUNT (s_runways)));
            break;
        case S_ST_FTSS:
            s_text (buf, d, name, s_pick (rng, s_statuses, S_COUNT (s_statuses)));
            break;
        case S_ST_REMC:
            s_text (buf, d, name, s_pick (rng, s_remarks, S_COUNT (s_remarks)));
            break;
        case S_ST_ACFT:
            s_text (buf, d, name, f->maxp? s_aircraft [s_below (rng, S_AIRCRAFT)].code: S_FREIGHTER);
            break;
        case S_ST_RENO:
            s_registration (rng, s_airlines [f->airline].reg, text, 12);
            s_text (buf, d, name, text);
            break;
        case S_ST_MAXP:
            s_int (buf, d, name, 5 * s_range (rng, 20, 70));
            break;
        case S_ST_FLTY: {
            static const char *types [] = { "W", "C", "L", "F", "P" };
            s_text (buf, d, name, s_pick (rng, types, S_COUNT (types)));
            break;
        }
        case S_ST_FLIN: {
            static const char *kinds [] = { "D", "I", "M" };
            s_text (buf, d, name, s_pick (rng, kinds, S_COUNT (kinds)));
            break;
        }
        case S_ST_CNCL:
            s_time (buf, d, name, self->clock_ms / 1000);
            break;
        case S_ST_HNAG: {
            //  Usually all three agents, sometimes only some of them
            int mask = s_chance (rng, 700000)? 7: s_range (rng, 1, 6);
            if (mask & 1)
                s_text (buf, d, "FHAG", s_pick (rng, s_handlers, S_COUNT (s_handlers)));
            if (mask & 2)
                s_text (buf, d, "PHAG", s_pick (rng, s_handlers, S_COUNT (s_handlers)));
            if (mask & 4)
                s_text (buf, d, "MHAG", s_pick (rng, s_handlers, S_COUNT (s_handlers)));
            break;
        }
        case S_ST_TAOP: {
            const s_flight_t *p = f->partner >= 0? &self->flights [f->partner]: NULL;
            if (!p)
                p = &self->flights [self->order [s_below (rng, (uint32_t) self->nflights)]];
            char flno [12];
            s_flno (p, flno, sizeof (flno));
            s_text (buf, d, "TAOP", s_airlines [p->airline].code);
            s_text (buf, d, "TAFL", flno);
            s_int (buf, d, "TAID", p->flid);
            break;
        }
        case S_ST_EXSS: {
            size_t i = s_below (rng, S_COUNT (s_exsc));
            s_text (buf, d, "EXSC", s_exsc [i]);
            s_text (buf, d, "EXSR", s_exsr [i]);
            break;
        }
        case S_ST_VIPP:
            s_int (buf, d, "VIPP", s_range (rng, 1, 6));
            if (s_chance (rng, 700000))
                s_int (buf, d, "VIPR", s_range (rng, 1, 5));
            break;
        case S_ST_FDIV:
            s_put (buf, "%.*s<FDIV", d, s_tabs);
            s_attr (self, buf, "DDES",
                    s_airport_other (rng, s_domestic, S_DOMESTIC, self->airport));
            s_attr (self, buf, "DDIR", s_chance (rng, 800000)? "TO": "FROM");
            s_put (buf, ">%s</FDIV>\n", s_pick (rng, s_divert_texts, S_COUNT (s_divert_texts)));
            break;
        case S_ST_FRET:
            s_put (buf, "%.*s<FRET", d, s_tabs);
            s_attr (self, buf, "REID", s_chance (rng, 700000)? "G": "A");
            s_put (buf, ">%s</FRET>\n", s_pick (rng, s_return_texts, S_COUNT (s_return_texts)));
            break;
        case S_ST_FLAB:
            s_put (buf, "%.*s<FLAB", d, s_tabs);
            s_attr (self, buf, "ARES", s_chance (rng, 700000)? "G": "A");
            s_put (buf, ">%s</FLAB>\n", s_pick (rng, s_abort_texts, S_COUNT (s_abort_texts)));
            break;
        case S_ST_PORT: {
            bool open = s_chance (rng, 600000);
            s_open (buf, d, "PORT");
            s_time (buf, d + 1, "POTM", open? s_near (self, f, -60, -40): s_near (self, f, -15, 0));
            s_text (buf, d + 1, "POID", open? "O": "C");
            s_close (buf, d, "PORT");
            break;
        }
        case S_ST_PSDT: {
            int64_t start, end;
            s_stand_window (self, f, &start, &end);
            int n = s_range (rng, 1, 3);
            int64_t span = (end - start) / n;
            for (int i = 0; i < n; i++) {
                int stand = 500 + s_range (rng, 1, 60);
                if (i == n - 1)
                    stand = f->stand;
                s_stand_code (stand, text, sizeof (text));
                s_open_numbered (self, buf, d, "PSDT", "PSNO", i + 1);
                s_text (buf, d + 1, "PSST", text);
                s_time (buf, d + 1, "STST", start + span * i);
                s_time (buf, d + 1, "STET", start + span * (i + 1));
                s_close (buf, d, "PSDT");
            }
            break;
        }
        case S_ST_GTDT: {
            int n = s_range (rng, 1, 2);
            int64_t base = f->mvin == 'D'? f->sodt - 50 * S_MINUTE: f->sodt;
            for (int i = 0; i < n; i++) {
                snprintf (text, sizeof (text), "G%d", i? s_range (rng, 1, 60): f->gate);
                s_open_numbered (self, buf, d, "GTDT", "GTNO", i + 1);
                s_text (buf, d + 1, "GATE", text);
                s_time (buf, d + 1, "PGOT", base);
                s_time (buf, d + 1, "PGCT", base + 35 * S_MINUTE);
                if (s_chance (rng, 500000))
                    s_time (buf, d + 1, "GOTM", base + s_range (rng, -5, 15) * S_MINUTE);
                if (s_chance (rng, 300000))
                    s_time (buf, d + 1, "GCTM", base + s_range (rng, 30, 45) * S_MINUTE);
                s_put (buf, "%.*s<GTYP>%c</GTYP>\n", d + 1, s_tabs, f->flin == 'D'? 'D': 'I');
                s_close (buf, d, "GTDT");
            }
            break;
        }
        case S_ST_CKDT: {
            int n = s_range (rng, 1, 4);
            int first = s_range (rng, 1, 90);
            for (int i = 0; i < n; i++) {
                snprintf (text, sizeof (text), "%02d", first + i);
                s_open_numbered (self, buf, d, "CKDT", "CKNO", i + 1);
                s_text (buf, d + 1, "CHKC", text);
                s_text (buf, d + 1, "CCLS", s_pick (rng, s_classes, S_COUNT (s_classes)));
                s_time (buf, d + 1, "PCOT", f->sodt - 150 * S_MINUTE);
                s_time (buf, d + 1, "PCCT", f->sodt - 40 * S_MINUTE);
                if (s_chance (rng, 600000))
                    s_time (buf, d + 1, "COTM", s_near (self, f, -160, -140));
                if (s_chance (rng, 300000))
                    s_time (buf, d + 1, "CCTM", s_near (self, f, -45, -35));
                s_put (buf, "%.*s<CTYP>%c</CTYP>\n", d + 1, s_tabs, f->flin == 'D'? 'D': 'I');
                s_close (buf, d, "CKDT");
            }
            break;
        }
        case S_ST_CLDT: {
            int n = s_range (rng, 1, 2);
            int belt = s_range (rng, 1, 23);
            for (int i = 0; i < n; i++) {
                snprintf (text, sizeof (text), "B%02d", belt + i);
                s_open_numbered (self, buf, d, "CLDT", "CLNO", i + 1);
                s_text (buf, d + 1, "BELT", text);
                s_text (buf, d + 1, "BCLS", "X");
                s_time (buf, d + 1, "PCOT", f->sodt + 10 * S_MINUTE);
                s_time (buf, d + 1, "PCCT", f->sodt + 50 * S_MINUTE);
                if (s_chance (rng, 500000))
                    s_time (buf, d + 1, "FBAG", s_near (self, f, 8, 20));
                if (s_chance (rng, 300000))
                    s_time (buf, d + 1, "LBAG", s_near (self, f, 25, 50));
                s_put (buf, "%.*s<BTYP>%c</BTYP>\n", d + 1, s_tabs, f->flin == 'D'? 'D': 'I');
                s_close (buf, d, "CLDT");
            }
            break;
        }
        case S_ST_CHDT: {
            int n = s_range (rng, 1, 2);
            for (int i = 0; i < n; i++) {
                snprintf (text, sizeof (text), "CH%04d", s_range (rng, 1, 40));
                s_open_numbered (self, buf, d, "CHDT", "CHNO", i + 1);
                s_text (buf, d + 1, "CHUT", text);
                s_text (buf, d + 1, "CCLS", s_pick (rng, s_classes, S_COUNT (s_classes)));
                s_time (buf, d + 1, "PCBT", f->sodt - 120 * S_MINUTE);
                s_time (buf, d + 1, "PCET", f->sodt - 30 * S_MINUTE);
                if (s_chance (rng, 500000))
                    s_time (buf, d + 1, "CBTM", s_near (self, f, -125, -110));
                if (s_chance (rng, 300000))
                    s_time (buf, d + 1, "CETM", s_near (self, f, -35, -20));
                s_put (buf, "%.*s<CTYP>%c</CTYP>\n", d + 1, s_tabs, f->flin == 'D'? 'D': 'I');
                s_close (buf, d, "CHDT");
            }
            break;
        }
        case S_ST_ABTM: {
            //  ABOP: WIRE §6 says date-time, the real FLOP_ABTM_01 carries a
            //  letter; the column is text, so a time stays valid for both
            int n = s_range (rng, 1, 2);
            for (int i = 0; i < n; i++) {
                snprintf (text, sizeof (text), "%d", f->trml * 100 + s_range (rng, 1, 40));
                s_open_numbered (self, buf, d, "ABTM", "ASNO", i + 1);
                s_text (buf, d + 1, "ABDG", text);
                s_time (buf, d + 1, "ABOP", f->mvin == 'A'? s_near (self, f, -2, 5)
                                                         : s_near (self, f, -60, -40));
                if (s_chance (rng, 600000))
                    s_time (buf, d + 1, "AOTM", f->mvin == 'A'? s_near (self, f, 20, 40)
                                                             : s_near (self, f, -8, -2));
                s_close (buf, d, "ABTM");
            }
            break;
        }
        case S_ST_CHOT: {
            int n = s_range (rng, 1, 2);
            s_stand_code (f->stand, text, sizeof (text));
            for (int i = 0; i < n; i++) {
                bool on = f->mvin == 'A'? i == 0: i != 0;
                s_open_numbered (self, buf, d, "CHOT", "CSNO", i + 1);
                s_time (buf, d + 1, "CHTM", on? s_near (self, f, -5, 5): s_near (self, f, -5, 0));
                s_text (buf, d + 1, "CHID", on? "ON": "OFF");
                s_text (buf, d + 1, "CHST", text);
                s_close (buf, d, "CHOT");
            }
            break;
        }
        case S_ST_DELY: {
            int n = s_range (rng, 1, 3);
            for (int i = 0; i < n; i++) {
                size_t reason = s_below (rng, S_COUNT (s_delay_codes));
                int minutes = 5 * s_range (rng, 1, 36);
                char start [12], dura [16];
                s_fmt_body (s_near (self, f, -10, 30), start);
                snprintf (dura, sizeof (dura), "%02d%02d", minutes / 60, minutes % 60);
                s_put (buf, "%.*s<DELY", d, s_tabs);
                s_attr (self, buf, "CODE", s_delay_codes [reason]);
                s_attr (self, buf, "STRT", start);
                s_attr (self, buf, "DURA", dura);
                s_put (buf, ">%s</DELY>\n", s_delay_texts [reason]);
            }
            break;
        }
        case S_ST_ROUT:
        case S_ST_ERUT:
            //  A stop added or removed now and then
            if (f->flin != 'I' && s_chance (rng, 300000))
                f->via = f->via? NULL
                       : s_airport_other (rng, s_domestic, S_DOMESTIC, self->airport);
            if (f->via && strcmp (f->via, f->other) == 0)
                f->via = NULL;
            s_route (self, buf, d, f, name, st == S_ST_ERUT);
            break;
        case S_ST_PSHT: {
            int n = s_range (rng, 1, 2);
            s_stand_code (f->stand, text, sizeof (text));
            for (int i = 0; i < n; i++) {
                s_open_numbered (self, buf, d, "PSHT", "PSHN", i + 1);
                s_time (buf, d + 1, "PSTM", s_near (self, f, i * 10 - 5, i * 10 + 5));
                s_text (buf, d + 1, "PSID", i? "OUT": "IN");
                s_text (buf, d + 1, "PUST", text);
                s_close (buf, d, "PSHT");
            }
            break;
        }
        case S_ST_TIPT: {
            int n = s_range (rng, 1, 2);
            for (int i = 0; i < n; i++) {
                s_open (buf, d, "TIPT");
                s_time (buf, d + 1, "TRTM", s_near (self, f, -10, 10));
                s_stand_code (i? 500 + s_range (rng, 1, 60): f->stand, text, sizeof (text));
                s_text (buf, d + 1, "TRST", text);
                s_close (buf, d, "TIPT");
            }
            break;
        }
        case S_ST_SRVT: {
            int n = s_range (rng, 1, 3);
            for (int i = 0; i < n; i++) {
                s_open (buf, d, "SRVT");
                s_text (buf, d + 1, "SRTC", s_pick (rng, s_services, S_COUNT (s_services)));
                s_int (buf, d + 1, "SRQT", s_range (rng, 0, 4));
                if (s_chance (rng, 800000)) {
                    s_time (buf, d + 1, "SRST", s_near (self, f, -40, -20));
                    s_time (buf, d + 1, "SRET", s_near (self, f, -15, 5));
                }
                else {
                    s_empty (self, buf, d + 1, "SRST");
                    s_empty (self, buf, d + 1, "SRET");
                }
                if (s_chance (rng, 500000))
                    s_int (buf, d + 1, "SRPR", 107000 + s_range (rng, 0, 99));
                else
                    s_empty (self, buf, d + 1, "SRPR");
                if (s_chance (rng, 300000)) {
                    size_t why = s_below (rng, S_COUNT (s_service_texts));
                    s_text (buf, d + 1, "SANR", s_service_codes [why]);
                    s_text (buf, d + 1, "SARR", s_service_texts [why]);
                }
                s_close (buf, d, "SRVT");
            }
            break;
        }
        case S_ST_VIPF:
            s_open (buf, d, "VIPF");
            snprintf (text, sizeof (text), "VC%05d", s_range (rng, 10000, 99999));
            s_text (buf, d + 1, "VPCD", text);
            s_int (buf, d + 1, "VFES", s_range (rng, 1, 5));
            s_close (buf, d, "VIPF");
            break;
        case S_ST_FDEL:
            s_empty (self, buf, d, "FDEL");
            f->deleted = true;
            break;
        default:
            //  Every subtype of the table has a case above
            abort ();
    }
}

static s_subtype_t
s_pick_subtype (mx_gen_t *self)
{
    return (s_subtype_t) s_weighted (&self->rng, self->weights, S_ST_COUNT, self->weight_sum);
}

static char *s_fdel_type_message (mx_gen_t *self, s_flight_t *f);

//  One FLOP message, optionally deformed
static char *
s_flop_message (mx_gen_t *self, s_defect_t defect)
{
    s_subtype_t st = defect == S_DEFECT_DOCTYPE? S_ST_REMC: s_pick_subtype (self);
    s_flight_t *f = s_pick_flight (self, s_subtypes [st].mvin);
    if (defect != S_DEFECT_NONE && st == S_ST_FDEL)
        st = S_ST_REMC;         //  a malformed FDEL would not delete anything
    bool clear = s_subtypes [st].clearable && s_chance (&self->rng, self->opts.clear_ppm);
    //  No draw unless asked: the default stream stays as it was
    if (st == S_ST_FDEL && defect == S_DEFECT_NONE && self->opts.fdel_type_ppm
    &&  s_chance (&self->rng, self->opts.fdel_type_ppm))
        return s_fdel_type_message (self, f);

    s_meta_set (self, "FLOP", s_subtypes [st].name, f->flid, self->clock_ms / 1000);
    int field = -1;
    if (defect == S_DEFECT_MISSING_FIELD || defect == S_DEFECT_EMPTY_FIELD) {
        field = (int) s_below (&self->rng, 5);
        self->meta.defect = defect == S_DEFECT_MISSING_FIELD
                          ? s_missing_names [field]: s_empty_names [field];
    }
    else
    if (defect == S_DEFECT_TRUNCATED)
        self->meta.defect = "truncated";
    else
    if (defect == S_DEFECT_DOCTYPE)
        self->meta.defect = "doctype";
    else
    if (defect == S_DEFECT_ROOT)
        self->meta.defect = "root";
    else
    if (defect == S_DEFECT_SEQN)
        self->meta.defect = "seqn";

    s_buf_t buf = { 0 };
    s_envelope_open (self, &buf, defect, field);
    char ffid [64];
    s_ffid (f, ffid, sizeof (ffid));
    s_open (&buf, 1, "FLOP");
    s_int (&buf, 2, "FLID", f->flid);
    s_text (&buf, 2, "FFID", ffid);
    s_flop_body (self, &buf, f, st, clear, defect == S_DEFECT_DOCTYPE);
    s_close (&buf, 1, "FLOP");
    s_envelope_close (&buf, defect);

    if (defect == S_DEFECT_TRUNCATED) {
        //  Cut somewhere after META, before the root's end tag
        char *body = strstr (buf.data, "</META>");
        size_t from = (size_t) (body - buf.data) + 7;
        size_t to = buf.len - 7;            //  "</MSG>\n"
        buf.len = from + s_below (&self->rng, (uint32_t) (to - from));
        //  ...on a character boundary: the mailbox column is utf8mb4
        while (buf.len > from && ((unsigned char) buf.data [buf.len] & 0xC0) == 0x80)
            buf.len--;
    }
    return s_take (&buf);
}

static char *
s_ignored_message (mx_gen_t *self)
{
    static const char *types [] = { "LDM", "RSTA", "EROR" };
    size_t which = s_below (&self->rng, S_COUNT (types));
    s_flight_t *f = s_pick_flight (self, 0);
    s_meta_set (self, types [which], which == 2? "NONE": "UPD",
                which == 0? f->flid: 0, self->clock_ms / 1000);
    s_buf_t buf = { 0 };
    s_envelope_open (self, &buf, S_DEFECT_NONE, -1);
    char text [96];
    if (which == 0) {
        char flno [12], ffid [64];
        s_flno (f, flno, sizeof (flno));
        s_ffid (f, ffid, sizeof (ffid));
        s_open (&buf, 1, "LDM");
        s_int (&buf, 2, "FLID", f->flid);
        s_text (&buf, 2, "FFID", ffid);
        //  One PRNG draw per statement: argument order is unspecified in C
        int pax = f->maxp * s_range (&self->rng, 50, 100) / 100;
        int load = s_range (&self->rng, 500, 4000);
        snprintf (text, sizeof (text), "LDM %s/%02d.%s.Y%d -%s.%d/0/0.T%d",
                  flno, s_civil (f->sodt).day, f->reno, f->maxp, f->other, pax, load);
        s_text (&buf, 2, "LDMT", text);
        s_close (&buf, 1, "LDM");
    }
    else
    if (which == 1) {
        s_open (&buf, 1, "RSTA");
        s_text (&buf, 2, "RTYP", "STND");
        s_stand_code (500 + s_range (&self->rng, 1, 60), text, sizeof (text));
        s_text (&buf, 2, "RCOD", text);
        s_text (&buf, 2, "RSTS", s_chance (&self->rng, 500000)? "C": "O");
        s_time (&buf, 2, "RSTM", self->clock_ms / 1000);
        s_close (&buf, 1, "RSTA");
    }
    else {
        s_open (&buf, 1, "EROR");
        snprintf (text, sizeof (text), "E%03d", s_range (&self->rng, 100, 199));
        s_text (&buf, 2, "ERCD", text);
        s_text (&buf, 2, "ERTX", "UNKNOWN FLIGHT");
        s_close (&buf, 1, "EROR");
    }
    s_envelope_close (&buf, S_DEFECT_NONE);
    return s_take (&buf);
}

//  A seasonal schedule record (SCHS), out of scope for the daemon
static char *
s_unsupported_message (mx_gen_t *self)
{
    s_flight_t *f = s_pick_flight (self, 0);
    s_meta_set (self, "SCHS", "DNLD", 0, self->clock_ms / 1000);
    s_buf_t buf = { 0 };
    s_envelope_open (self, &buf, S_DEFECT_NONE, -1);
    char text [16], flno [12];
    s_flno (f, flno, sizeof (flno));
    s_open (&buf, 1, "SCHS");
    s_text (&buf, 2, "SNAM", "Winter");
    s_text (&buf, 2, "APCD", self->airport);
    s_fmt_date (self->day0 - 60 * (int64_t) S_DAY, text);
    s_text (&buf, 2, "SDAT", text);
    s_fmt_date (self->day0 + 90 * (int64_t) S_DAY, text);
    s_text (&buf, 2, "EDAT", text);
    s_text (&buf, 2, "RECS", "1");
    s_open (&buf, 2, "FLTR");
    s_text (&buf, 3, "ALCD", s_airlines [f->airline].code);
    s_text (&buf, 3, "FLNO", flno);
    s_put (&buf, "\t\t\t<MVIN>%c</MVIN>\n", f->mvin);
    s_fmt_date (self->day0 - 60 * (int64_t) S_DAY, text);
    s_text (&buf, 3, "STDT", text);
    s_fmt_date (self->day0 + 90 * (int64_t) S_DAY, text);
    s_text (&buf, 3, "EDDT", text);
    s_text (&buf, 3, "DYOP", "1234567");
    s_civil_t c = s_civil (f->sodt);
    snprintf (text, sizeof (text), "%02d%02d", c.hour, c.minute);
    s_text (&buf, 3, "SCHT", text);
    s_text (&buf, 3, "FLTY", f->flty);
    s_put (&buf, "\t\t\t<FLIN>%c</FLIN>\n", f->flin);
    s_open_numbered (self, &buf, 3, "ROUT", "RTNO", 1);
    s_text (&buf, 4, "APCD", f->other);
    c = s_civil (f->mvin == 'D'? f->sodt + (int64_t) f->block1 * S_MINUTE
                               : f->sodt - (int64_t) f->block1 * S_MINUTE);
    snprintf (text, sizeof (text), "%02d%02d", c.hour, c.minute);
    s_text (&buf, 4, f->mvin == 'D'? "SCAT": "SCDT", text);
    s_close (&buf, 3, "ROUT");
    s_close (&buf, 2, "FLTR");
    s_close (&buf, 1, "SCHS");
    s_envelope_close (&buf, S_DEFECT_NONE);
    return s_take (&buf);
}

//  ---------------------------------------------------------------------
//  Reference lists

static size_t
s_list_pool (s_list_t list)
{
    switch (list) {
        case S_LIST_GLST: return 60;
        case S_LIST_SLST: return 180;
        case S_LIST_CLST: return 96;
        case S_LIST_BLST: return 24;
        case S_LIST_CHLT: return 40;
        case S_LIST_PLST: return 8;
        case S_LIST_TLST: return 3;
        case S_LIST_ABDG: return 80;
        case S_LIST_AIRC: return S_AIRCRAFT + 1;
        case S_LIST_AIRL: return S_AIRLINES;
        case S_LIST_ARPT:
        case S_LIST_CITY: return S_DOMESTIC + S_INTERNATIONAL;
        case S_LIST_COUL: return S_COUNT (s_countries);
        case S_LIST_REGL: return S_COUNT (s_regions);
        case S_LIST_ABNR: return S_COUNT (s_abnormal);
        case S_LIST_DLYL: return S_COUNT (s_delay_list);
        case S_LIST_HLTR: return S_COUNT (s_handling_tasks);
        case S_LIST_ORGN: return S_COUNT (s_organisations);
        case S_LIST_STTS: return S_COUNT (s_status_names);
        case S_LIST_FLTL: return S_COUNT (s_flight_types);
        case S_LIST_VIPL: return S_VIPL_POOL;
        case S_LIST_VIPS: return S_COUNT (s_vip_services);
        case S_LIST_REGN: return S_REGN_POOL;
        default: abort ();
    }
}

//  Stands 101-160 (T1), 201-260 (T2), 501-560 (remote), as the flights use
static int
s_list_stand (size_t i)
{
    return i < 60? 101 + (int) i: i < 120? 201 + (int) (i - 60): 501 + (int) (i - 120);
}

static const char *
s_list_airport (size_t i, const char **country)
{
    if (i < S_DOMESTIC) {
        *country = "PRC";
        return s_domestic [i];
    }
    *country = s_international_country [i - S_DOMESTIC];
    return s_international [i - S_DOMESTIC];
}

//  Key of pool entry i; unique within the list
static void
s_list_key (s_list_t list, size_t i, char *out, size_t size)
{
    const char *country;
    switch (list) {
        case S_LIST_GLST: snprintf (out, size, "G%zu", i + 1); break;
        case S_LIST_SLST: snprintf (out, size, "%d", s_list_stand (i)); break;
        case S_LIST_CLST: snprintf (out, size, "%02zu", i + 1); break;
        case S_LIST_BLST: snprintf (out, size, "B%02zu", i + 1); break;
        case S_LIST_CHLT: snprintf (out, size, "CH%04zu", i + 1); break;
        case S_LIST_PLST: snprintf (out, size, "%c", (char) ('A' + i)); break;
        case S_LIST_TLST: snprintf (out, size, "T%zu", i + 1); break;
        case S_LIST_ABDG: snprintf (out, size, "%zu", i < 40? 101 + i: 201 + i - 40); break;
        case S_LIST_AIRC:
            snprintf (out, size, "%s", i < S_AIRCRAFT? s_aircraft [i].code: S_FREIGHTER);
            break;
        case S_LIST_AIRL: snprintf (out, size, "%s", s_airlines [i].code); break;
        case S_LIST_ARPT:
        case S_LIST_CITY: snprintf (out, size, "%s", s_list_airport (i, &country)); break;
        case S_LIST_COUL: snprintf (out, size, "%s", s_countries [i].code); break;
        case S_LIST_REGL: snprintf (out, size, "%s", s_regions [i].code); break;
        case S_LIST_ABNR: snprintf (out, size, "%s", s_abnormal [i].code); break;
        case S_LIST_DLYL: snprintf (out, size, "%s", s_delay_list [i].code); break;
        case S_LIST_HLTR: snprintf (out, size, "%s", s_handling_tasks [i].code); break;
        case S_LIST_ORGN: snprintf (out, size, "%s", s_organisations [i]); break;
        case S_LIST_STTS: snprintf (out, size, "%s", s_status_names [i].code); break;
        case S_LIST_FLTL: snprintf (out, size, "%s", s_flight_types [i].code); break;
        //  Multipliers coprime to the modulus keep the keys unique
        case S_LIST_VIPL: snprintf (out, size, "VC%05zu", 10000 + i * 1733 % 90000); break;
        case S_LIST_VIPS: snprintf (out, size, "%s", s_vip_services [i].code); break;
        case S_LIST_REGN: snprintf (out, size, "B%04zu", 1000 + i * 37 % 9000); break;
        default: abort ();
    }
}

//  A name that changes with each UPD of the record
static void
s_named (s_buf_t *buf, int depth, const char *name, const char *value, unsigned rev)
{
    if (rev)
        s_put (buf, "%.*s<%s>%s REV %u</%s>\n", depth, s_tabs, name, value, rev, name);
    else
        s_text (buf, depth, name, value);
}

//  One record of a list: key first, then the fields the real samples show
static void
s_list_record (mx_gen_t *self, s_buf_t *buf, s_list_t list, size_t i, unsigned rev)
{
    const int d = 2;
    char key [32], text [96];
    s_list_key (list, i, key, sizeof (key));
    const char *name = s_lists [list].name;
    s_open (buf, 1, name);
    s_text (buf, d, s_lists [list].key, key);
    const char *country;
    switch (list) {
        case S_LIST_GLST:
            snprintf (text, sizeof (text), "Gate %s", key);
            s_named (buf, d, "GTNM", text, rev);
            snprintf (text, sizeof (text), "%zu号登机口", i + 1);
            s_text (buf, d, "GNMC", text);
            s_text (buf, d, "GCAT", i < 40? "D": "I");
            s_text (buf, d, "GTML", i < 30? "T1": "T2");
            snprintf (text, sizeof (text), "%c", (char) ('A' + i / 8));
            s_text (buf, d, "PIER", text);
            break;
        case S_LIST_SLST: {
            bool remote = i >= 120;
            snprintf (text, sizeof (text), "Stand %s", key);
            s_named (buf, d, "STNM", text, rev);
            snprintf (text, sizeof (text), "%s号机位", key);
            s_text (buf, d, "SNMC", text);
            s_text (buf, d, "SATC", i % 5 == 0? "E": "C");
            s_text (buf, d, "STGP", remote? "REMOTE": i < 60? "T1 CONTACT": "T2 CONTACT");
            s_empty (self, buf, d, "SWID");
            s_text (buf, d, "STML", remote? "": i < 60? "T1": "T2");
            s_text (buf, d, "MABS", remote? "0": i % 5 == 0? "2": "1");
            s_text (buf, d, "REMT", remote? "Y": "N");
            break;
        }
        case S_LIST_CLST:
            snprintf (text, sizeof (text), "Desk %s", key);
            s_named (buf, d, "CTNM", text, rev);
            snprintf (text, sizeof (text), "%s号柜台", key);
            s_text (buf, d, "CNMC", text);
            s_text (buf, d, "CCAT", i < 70? "D": "I");
            s_text (buf, d, "CTML", i < 48? "T1": "T2");
            s_text (buf, d, "CTRA", i % 7 == 0? "Y": "N");
            break;
        case S_LIST_BLST:
            snprintf (text, sizeof (text), "Belt %s", key);
            s_named (buf, d, "BTNM", text, rev);
            snprintf (text, sizeof (text), "%zu号行李转盘", i + 1);
            s_text (buf, d, "BNMC", text);
            s_text (buf, d, "BCAT", i < 18? "D": "I");
            s_text (buf, d, "BTML", i < 12? "T1": "T2");
            break;
        case S_LIST_CHLT:
            snprintf (text, sizeof (text), "Chute %zu", i + 1);
            s_named (buf, d, "CHNM", text, rev);
            snprintf (text, sizeof (text), "%zu号行李滑槽", i + 1);
            s_text (buf, d, "CNMC", text);
            s_text (buf, d, "CTML", i < 20? "T1": "T2");
            s_text (buf, d, "CCAT", i < 30? "D": "I");
            break;
        case S_LIST_PLST:
            snprintf (text, sizeof (text), "PIER %s", key);
            s_named (buf, d, "PRNM", text, rev);
            snprintf (text, sizeof (text), "%s指廊", key);
            s_text (buf, d, "PNMC", text);
            s_text (buf, d, "PCAT", i < 5? "D": "I");
            s_text (buf, d, "PTML", i < 4? "T1": "T2");
            break;
        case S_LIST_TLST:
            snprintf (text, sizeof (text), "TERMINAL %s", key);
            s_named (buf, d, "TNAM", text, rev);
            snprintf (text, sizeof (text), "%s航站楼", key);
            s_text (buf, d, "TNMC", text);
            s_text (buf, d, "TCAT", i == 0? "D": i == 1? "M": "I");
            s_text (buf, d, "TPAX", i < 2? "Y": "N");
            break;
        case S_LIST_ABDG:
            snprintf (text, sizeof (text), "Airbridge %s", key);
            s_named (buf, d, "DESC", text, rev);
            snprintf (text, sizeof (text), "登机桥 %s", key);
            s_text (buf, d, "CDSC", text);
            s_empty (self, buf, d, "AHGT");
            s_text (buf, d, "ATML", i < 40? "T1": "T2");
            s_text (buf, d, "ATHE", "N");
            s_text (buf, d, "STND", key);
            snprintf (text, sizeof (text), "G%zu", i % 60 + 1);
            s_text (buf, d, "GATE", text);
            s_text (buf, d, "AMNO", i % 4 == 0? "2": "1");
            break;
        case S_LIST_AIRC: {
            int maxp = i < S_AIRCRAFT? s_aircraft [i].maxp: 0;
            s_text (buf, d, "ICAT", s_aircraft_icao [i]);
            snprintf (text, sizeof (text), "AIRCRAFT TYPE %s", s_aircraft_icao [i]);
            s_named (buf, d, "DESC", text, rev);
            s_text (buf, d, "CHAP", "C");
            if (maxp)
                s_int (buf, d, "MAXP", maxp);
            else
                s_empty (self, buf, d, "MAXP");
            s_int (buf, d, "MTWT", i < S_AIRCRAFT && s_aircraft [i].wide? 250000: 78000);
            s_int (buf, d, "MABR", i < S_AIRCRAFT && s_aircraft [i].wide? 2: 1);
            break;
        }
        case S_LIST_AIRL: {
            const s_airline_t *al = &s_airlines [i];
            s_text (buf, d, "ICOP", s_airline_icao [i]);
            snprintf (text, sizeof (text), "AIRLINE %s", al->code);
            s_named (buf, d, "ONAM", text, rev);
            snprintf (text, sizeof (text), "%s航空公司", al->code);
            s_text (buf, d, "ONMC", text);
            country = "PRC";
            if (al->foreign)
                for (size_t a = 0; a < S_INTERNATIONAL; a++)
                    if (strcmp (s_international [a], al->hub) == 0)
                        country = s_international_country [a];
            s_text (buf, d, "CTRY", country);
            s_put (buf, "%.*s<TRML", d, s_tabs);
            s_attr (self, buf, "MVIN", "");
            s_attr (self, buf, "FLIN", "");
            snprintf (text, sizeof (text), "T%d", al->trml);
            s_put (buf, ">%s</TRML>\n", text);
            s_text (buf, d, "DORI", al->foreign? "I": "D");
            break;
        }
        case S_LIST_ARPT:
            s_list_airport (i, &country);
            snprintf (text, sizeof (text), "AIRPORT %s", key);
            s_named (buf, d, "ANAM", text, rev);
            s_text (buf, d, "CTRY", country);
            s_text (buf, d, "ACTY", key);
            s_text (buf, d, "ATYP", i < S_DOMESTIC? "D": "I");
            s_text (buf, d, "HAUL", i < S_DOMESTIC? "S": "L");
            s_put (buf, "%.*s<ABBR", d + 1, s_tabs);
            s_attr (self, buf, "CODE", "ABR1");
            s_put (buf, ">%s</ABBR>\n", key);
            break;
        case S_LIST_CITY:
            s_list_airport (i, &country);
            snprintf (text, sizeof (text), "CITY OF %s", key);
            s_named (buf, d, "CNAM", text, rev);
            snprintf (text, sizeof (text), "%s市", key);
            s_text (buf, d, "CNMC", text);
            s_text (buf, d, "CTRY", country);
            break;
        case S_LIST_COUL:
            s_named (buf, d, "COUN", s_countries [i].name, rev);
            s_text (buf, d, "CNMC", s_countries [i].local);
            //  A repeated child: the value becomes an array
            s_text (buf, d, "REGC", s_countries [i].region);
            if (s_countries [i].region2)
                s_text (buf, d, "REGC", s_countries [i].region2);
            break;
        case S_LIST_REGL:
            s_named (buf, d, "REGN", s_regions [i].name, rev);
            s_text (buf, d, "RGNC", s_regions [i].local);
            break;
        case S_LIST_ABNR:
            s_named (buf, d, "ANRD", s_abnormal [i].name, rev);
            s_text (buf, d, "ARDC", s_abnormal [i].local);
            break;
        case S_LIST_DLYL:
            s_text (buf, d, "DCDN", s_delay_list [i].alpha);
            s_named (buf, d, "DDES", s_delay_list [i].name, rev);
            s_text (buf, d, "DDSC", s_delay_list [i].local);
            break;
        case S_LIST_HLTR:
            s_named (buf, d, "HLTD", s_handling_tasks [i].name, rev);
            s_text (buf, d, "HTDC", s_handling_tasks [i].local);
            s_text (buf, d, "HLTT", s_handling_tasks [i].alpha);
            s_empty (self, buf, d, "UMNM");
            break;
        case S_LIST_ORGN:
            snprintf (text, sizeof (text), "GROUND HANDLER %s", key);
            s_named (buf, d, "ONAM", text, rev);
            snprintf (text, sizeof (text), "地面代理%s", key);
            s_text (buf, d, "ONMC", text);
            s_text (buf, d, "OCAT", s_org_kinds [i % S_COUNT (s_org_kinds)]);
            break;
        case S_LIST_STTS:
            s_named (buf, d, "STTD", s_status_names [i].name, rev);
            s_text (buf, d, "STDC", s_status_names [i].local);
            s_text (buf, d, "ABNS", strcmp (key, "DLY") == 0? "Y": "N");
            break;
        case S_LIST_FLTL:
            s_text (buf, d, "CTYP", i == 1? "CHT": "SCH");
            s_named (buf, d, "FDES", s_flight_types [i].name, rev);
            s_text (buf, d, "FDSC", s_flight_types [i].local);
            s_text (buf, d, "FCML", i < 2? "Y": "N");
            break;
        case S_LIST_VIPL:
            snprintf (text, sizeof (text), "%zu", 200 + i);
            s_text (buf, d, "VPNC", text);
            s_named (buf, d, "VFNM", s_first_names [i % S_COUNT (s_first_names)], rev);
            s_text (buf, d, "VLNM", s_last_names [i % S_COUNT (s_last_names)]);
            s_text (buf, d, "VDES", i % 3 == 0? "Minister": "Guest");
            s_int (buf, d, "VRNK", (int64_t) (i % 5 + 1));
            s_text (buf, d, "VRMK", "贵宾");
            break;
        case S_LIST_VIPS:
            s_named (buf, d, "VSDS", s_vip_services [i].name, rev);
            s_text (buf, d, "VSDC", s_vip_services [i].local);
            s_int (buf, d, "VSQC", 1);
            s_text (buf, d, "VSUC", i % 2? "Y": "N");
            break;
        case S_LIST_REGN: {
            size_t type = i % S_AIRCRAFT;
            s_text (buf, d, "ITAT", s_aircraft [type].code);
            snprintf (text, sizeof (text), "%zu", 50000 + i);
            s_named (buf, d, "OWID", text, rev);
            s_text (buf, d, "ACAL", s_airlines [i % 25].code);
            s_int (buf, d, "MAXP", s_aircraft [type].maxp);
            s_empty (self, buf, d, "MTWT");
            break;
        }
        default:
            abort ();
    }
    s_close (buf, 1, name);
}

//  One message of a reference list: DNLD the first time, then ADD, UPD,
//  DEL or again DNLD, keeping track of what the upstream's list holds
static char *
s_reference_message (mx_gen_t *self)
{
    s_rng_t *rng = &self->rng;
    size_t nth = s_below (rng, (uint32_t) self->lists_on);
    s_list_t list = 0;
    for (size_t i = 0; i < S_LIST_COUNT; i++)
        if (self->list_on [i] && nth-- == 0) {
            list = (s_list_t) i;
            break;
        }
    s_list_state_t *state = &self->lists [list];
    if (!state->present) {
        state->size = s_list_pool (list);
        state->present = s_alloc (state->size);
        state->rev = s_alloc (state->size * sizeof (uint16_t));
    }
    size_t present = 0;
    for (size_t i = 0; i < state->size; i++)
        present += state->present [i];

    const char *styp = "DNLD";
    if (state->downloaded) {
        uint32_t r = s_below (rng, 100);
        styp = r < 10? "DNLD": r < 40? "ADD": r < 80? "UPD": "DEL";
    }
    if (strcmp (styp, "ADD") == 0 && present == state->size)
        styp = "UPD";
    if ((strcmp (styp, "UPD") == 0 || strcmp (styp, "DEL") == 0) && present == 0)
        styp = "ADD";

    size_t *picks = s_alloc (state->size * sizeof (size_t));
    size_t npicks = 0;
    if (strcmp (styp, "DNLD") == 0) {
        //  The whole list as the upstream holds it now: mostly the same
        //  keys as before, a few come and go
        for (size_t i = 0; i < state->size; i++)
            if (state->downloaded
                ? s_chance (rng, 20000)
                : s_chance (rng, 850000))
                state->present [i] ^= 1;
        for (size_t i = 0; i < state->size; i++)
            if (state->present [i])
                picks [npicks++] = i;
        if (npicks == 0) {
            state->present [0] = 1;
            picks [npicks++] = 0;
        }
        state->downloaded = true;
    }
    else {
        bool want = strcmp (styp, "ADD") != 0;
        size_t candidates = 0;
        for (size_t i = 0; i < state->size; i++)
            if ((state->present [i] != 0) == want)
                picks [candidates++] = i;
        size_t n = (size_t) s_range (rng, 1, candidates < 3? (int) candidates: 3);
        //  Partial Fisher-Yates: the first n become the chosen ones
        for (size_t i = 0; i < n; i++) {
            size_t j = i + s_below (rng, (uint32_t) (candidates - i));
            size_t swap = picks [i];
            picks [i] = picks [j];
            picks [j] = swap;
        }
        npicks = n;
        for (size_t i = 0; i < n; i++) {
            if (strcmp (styp, "ADD") == 0)
                state->present [picks [i]] = 1;
            else
            if (strcmp (styp, "UPD") == 0)
                state->rev [picks [i]]++;
        }
    }

    s_meta_set (self, s_lists [list].name, styp, 0, self->clock_ms / 1000);
    s_buf_t buf = { 0 };
    s_envelope_open (self, &buf, S_DEFECT_NONE, -1);
    s_put (&buf, "\t<RECS>%zu</RECS>\n", npicks);
    for (size_t i = 0; i < npicks; i++)
        s_list_record (self, &buf, list, picks [i], state->rev [picks [i]]);
    s_envelope_close (&buf, S_DEFECT_NONE);
    if (strcmp (styp, "DEL") == 0)
        for (size_t i = 0; i < npicks; i++)
            state->present [picks [i]] = 0;
    free (picks);
    return s_take (&buf);
}

//  ---------------------------------------------------------------------
//  Schedule changes during the day: ad-hoc flights, deletions

//  A flight not in the day's schedule, leaving in the next hours; returns
//  its index
static size_t
s_add_flight (mx_gen_t *self)
{
    if (self->nflights == self->flights_cap) {
        size_t cap = self->flights_cap? 2 * self->flights_cap: 16;
        s_flight_t *flights = realloc (self->flights, cap * sizeof (s_flight_t));
        size_t *order = realloc (self->order, cap * sizeof (size_t));
        if (!flights || !order) {
            fprintf (stderr, "mx_gen: out of memory\n");
            abort ();
        }
        self->flights = flights;
        self->order = order;
        self->flights_cap = cap;
    }
    s_rng_t *rng = &self->rng;
    size_t index = self->nflights;
    s_flight_t *f = &self->flights [index];
    memset (f, 0, sizeof (*f));
    size_t airline = s_below (rng, S_AIRLINES);
    s_flight_base (self, rng, f, airline);
    f->mvin = s_chance (rng, 500000)? 'A': 'D';
    //  Extra sections take numbers the schedule does not use
    int number = s_airlines [airline].foreign
               ? 2 * s_range (rng, 400, 498) + 1
               : 2 * s_range (rng, 4500, 4990) + 1;
    f->number = f->mvin == 'A'? number + 1: number;
    int64_t slot = self->clock_ms / 1000 / 300 + s_range (rng, 12, 72);
    int64_t last = self->day0 + 23 * S_HOUR + 55 * S_MINUTE;
    f->sodt = slot * 300 < last? slot * 300: last;
    f->flid = self->next_flid++;
    self->nflights++;

    //  Keep order sorted by (SODT, index): the new index is the largest
    size_t a = 0, b = index;
    while (a < b) {
        size_t mid = (a + b) / 2;
        if (self->flights [self->order [mid]].sodt <= f->sodt)
            a = mid + 1;
        else
            b = mid;
    }
    memmove (self->order + a + 1, self->order + a, (index - a) * sizeof (size_t));
    self->order [a] = index;
    return index;
}

//  SCHD/ADFT: one to three full FLTR records, new flights or known ones
static char *
s_adhoc_message (mx_gen_t *self)
{
    s_rng_t *rng = &self->rng;
    size_t picks [3];
    size_t count = 0;
    int n = s_range (rng, 1, 3);
    for (int i = 0; i < n; i++) {
        if (s_chance (rng, 600000)) {
            picks [count++] = s_add_flight (self);
            continue;
        }
        //  Index at once: adding a flight may move the array
        size_t index = (size_t) (s_pick_flight (self, 0) - self->flights);
        bool seen = self->flights [index].deleted;
        for (size_t j = 0; j < count; j++)
            seen = seen || picks [j] == index;
        if (!seen)
            picks [count++] = index;
    }
    if (count == 0)
        picks [count++] = s_add_flight (self);

    s_meta_set (self, "SCHD", "ADFT", 0, self->clock_ms / 1000);
    s_buf_t buf = { 0 };
    s_envelope_open (self, &buf, S_DEFECT_NONE, -1);
    s_open (&buf, 1, "SCHD");
    s_put (&buf, "\t\t<RECS>%zu</RECS>\n", count);
    for (size_t i = 0; i < count; i++)
        s_fltr (self, &buf, &self->flights [picks [i]]);
    s_close (&buf, 1, "SCHD");
    s_envelope_close (&buf, S_DEFECT_NONE);
    return s_take (&buf);
}

//  SCHD/DEL: one to three flights, named by FLID and their identification
static char *
s_schd_delete_message (mx_gen_t *self)
{
    s_rng_t *rng = &self->rng;
    s_flight_t *picks [3];
    size_t count = 0;
    int n = s_range (rng, 1, 3);
    for (int i = 0; i < n; i++) {
        s_flight_t *f = s_pick_flight (self, 0);
        bool seen = f->deleted;
        for (size_t j = 0; j < count; j++)
            seen = seen || picks [j] == f;
        if (!seen)
            picks [count++] = f;
    }
    if (count == 0)
        picks [count++] = s_pick_flight (self, 0);

    s_meta_set (self, "SCHD", "DEL", 0, self->clock_ms / 1000);
    s_buf_t buf = { 0 };
    s_envelope_open (self, &buf, S_DEFECT_NONE, -1);
    s_open (&buf, 1, "SCHD");
    s_put (&buf, "\t\t<RECS>%zu</RECS>\n", count);
    for (size_t i = 0; i < count; i++) {
        s_flight_t *f = picks [i];
        char flno [12];
        s_flno (f, flno, sizeof (flno));
        s_open (&buf, 2, "FLTR");
        s_int (&buf, 3, "FLID", f->flid);
        s_text (&buf, 3, "ALCD", s_airlines [f->airline].code);
        s_text (&buf, 3, "FLNO", flno);
        s_put (&buf, "\t\t\t<MVIN>%c</MVIN>\n", f->mvin);
        s_time (&buf, 3, "SODT", f->sodt);
        s_close (&buf, 2, "FLTR");
        f->deleted = true;
    }
    s_close (&buf, 1, "SCHD");
    s_envelope_close (&buf, S_DEFECT_NONE);
    return s_take (&buf);
}

//  TYPE=FDEL: body <FDEL> with FLID and FFID, now and then the <FLOP> form
static char *
s_fdel_type_message (mx_gen_t *self, s_flight_t *f)
{
    s_meta_set (self, "FDEL", "FDEL", f->flid, self->clock_ms / 1000);
    s_buf_t buf = { 0 };
    s_envelope_open (self, &buf, S_DEFECT_NONE, -1);
    char ffid [64];
    s_ffid (f, ffid, sizeof (ffid));
    if (s_chance (&self->rng, 750000)) {
        s_open (&buf, 1, "FDEL");
        s_int (&buf, 2, "FLID", f->flid);
        s_text (&buf, 2, "FFID", ffid);
        s_close (&buf, 1, "FDEL");
    }
    else {
        s_open (&buf, 1, "FLOP");
        s_int (&buf, 2, "FLID", f->flid);
        s_text (&buf, 2, "FFID", ffid);
        s_empty (self, &buf, 2, "FDEL");
        s_close (&buf, 1, "FLOP");
    }
    s_envelope_close (&buf, S_DEFECT_NONE);
    f->deleted = true;
    return s_take (&buf);
}

//  ---------------------------------------------------------------------
//  Hostile messages: a FLOP/REMC that a safe parser must refuse

static void
s_append (s_buf_t *buf, const char *data, size_t size)
{
    s_reserve (buf, size);
    memcpy (buf->data + buf->len, data, size);
    buf->len += size;
}

static char *
s_hostile_message (mx_gen_t *self)
{
    s_hostile_t hostile = (s_hostile_t) s_below (&self->rng, S_HOSTILES);
    s_flight_t *f = s_pick_flight (self, 0);
    s_meta_set (self, "FLOP", "REMC", f->flid, self->clock_ms / 1000);
    self->meta.defect = s_hostile_names [hostile];

    static const char *doctypes [S_HOSTILES] = {
        [S_HOSTILE_LAUGHS] =
            "<!DOCTYPE MSG [\n"
            "<!ENTITY lol \"lol\">\n"
            "<!ENTITY lol1 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">\n"
            "<!ENTITY lol2 \"&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;\">\n"
            "<!ENTITY lol3 \"&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;\">\n"
            "<!ENTITY lol4 \"&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;\">\n"
            "<!ENTITY lol5 \"&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;\">\n"
            "<!ENTITY lol6 \"&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;\">\n"
            "<!ENTITY lol7 \"&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;\">\n"
            "<!ENTITY lol8 \"&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;\">\n"
            "<!ENTITY lol9 \"&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;\">\n"
            "]>\n",
        [S_HOSTILE_EXTERNAL] =
            "<!DOCTYPE MSG [\n<!ENTITY ext SYSTEM \"file:///etc/passwd\">\n]>\n",
        [S_HOSTILE_DTD] =
            "<!DOCTYPE MSG SYSTEM \"http://aodb.invalid/unisysaodbsis.dtd\">\n",
        [S_HOSTILE_PARAMETER] =
            "<!DOCTYPE MSG [\n<!ENTITY % remote SYSTEM \"http://aodb.invalid/remote.dtd\">\n"
            "%remote;\n]>\n",
        [S_HOSTILE_OVERSIZED] = NULL
    };
    s_buf_t buf = { 0 };
    s_envelope_start (self, &buf, S_DEFECT_NONE, -1, doctypes [hostile]);
    char ffid [64];
    s_ffid (f, ffid, sizeof (ffid));
    s_open (&buf, 1, "FLOP");
    s_int (&buf, 2, "FLID", f->flid);
    s_text (&buf, 2, "FFID", ffid);
    if (hostile == S_HOSTILE_LAUGHS)
        s_text (&buf, 2, "REMC", "&lol9;");
    else
    if (hostile == S_HOSTILE_EXTERNAL)
        s_text (&buf, 2, "REMC", "&ext;");
    else
    if (hostile == S_HOSTILE_OVERSIZED) {
        static const char tail [] = "</REMC>\n\t</FLOP>\n</MSG>\n";
        static const char chunk [] = "航班延误 请注意广播 FLIGHT DELAYED PLEASE LISTEN FOR ANNOUNCEMENTS ";
        s_put (&buf, "\t\t<REMC>");
        //  Whole chunks only: the text stays valid UTF-8
        while (buf.len + strlen (tail) < self->opts.oversize_bytes)
            s_append (&buf, chunk, strlen (chunk));
        s_append (&buf, tail, strlen (tail));
        return s_take (&buf);
    }
    else
        s_text (&buf, 2, "REMC", s_pick (&self->rng, s_remarks, S_COUNT (s_remarks)));
    s_close (&buf, 1, "FLOP");
    s_envelope_close (&buf, S_DEFECT_NONE);
    return s_take (&buf);
}

//  "GLST,SLST" into on[]; -1 with a reason on error
static int
s_parse_lists (const char *text, bool *on, size_t *count, char *reason, size_t size)
{
    memset (on, 0, S_LIST_COUNT * sizeof (bool));
    *count = 0;
    const char *p = text;
    while (true) {
        const char *comma = strchr (p, ',');
        size_t length = comma? (size_t) (comma - p): strlen (p);
        size_t list = 0;
        while (list < S_LIST_COUNT
           && !(strlen (s_lists [list].name) == length
             && memcmp (s_lists [list].name, p, length) == 0))
            list++;
        if (list == S_LIST_COUNT) {
            snprintf (reason, size, "lists names unknown reference list '%.*s'", (int) length, p);
            return -1;
        }
        if (!on [list])
            (*count)++;
        on [list] = true;
        if (!comma)
            break;
        p = comma + 1;
    }
    return 0;
}

//  ---------------------------------------------------------------------
//  Options

//  Parse "NAME:W,NAME:W" into weights; -1 with a reason on error
static int
s_parse_mix (const char *mix, uint32_t *weights, char *reason, size_t size)
{
    memset (weights, 0, S_ST_COUNT * sizeof (uint32_t));
    const char *p = mix;
    uint64_t sum = 0;
    while (*p) {
        const char *colon = strchr (p, ':');
        const char *comma = strchr (p, ',');
        if (!comma)
            comma = p + strlen (p);
        if (!colon || colon > comma) {
            snprintf (reason, size, "mix entry '%.*s' is not NAME:WEIGHT",
                      (int) (comma - p), p);
            return -1;
        }
        size_t st = 0;
        for (; st < S_ST_COUNT; st++)
            if (strlen (s_subtypes [st].name) == (size_t) (colon - p)
            &&  memcmp (s_subtypes [st].name, p, (size_t) (colon - p)) == 0)
                break;
        if (st == S_ST_COUNT) {
            snprintf (reason, size, "mix names unknown FLOP subtype '%.*s'",
                      (int) (colon - p), p);
            return -1;
        }
        uint64_t weight = 0;
        const char *q = colon + 1;
        if (q == comma) {
            snprintf (reason, size, "mix entry for %s has no weight", s_subtypes [st].name);
            return -1;
        }
        for (; q < comma; q++) {
            if (*q < '0' || *q > '9' || weight > 100000) {
                snprintf (reason, size, "mix weight for %s must be 0..100000",
                          s_subtypes [st].name);
                return -1;
            }
            weight = weight * 10 + (uint64_t) (*q - '0');
        }
        if (weight > 100000) {
            snprintf (reason, size, "mix weight for %s must be 0..100000", s_subtypes [st].name);
            return -1;
        }
        weights [st] = (uint32_t) weight;
        sum += weight;
        p = *comma? comma + 1: comma;
    }
    if (sum == 0) {
        snprintf (reason, size, "mix gives no FLOP subtype a weight");
        return -1;
    }
    return 0;
}

void
mx_gen_options_init (mx_gen_options_t *opts)
{
    memset (opts, 0, sizeof (*opts));
    opts->seed = 1;
    opts->flights = 200;
    opts->updates = 1000;
    opts->per_message = 500;
    opts->day = "2021-01-23";
    opts->first_flid = 0;
    opts->first_seqn = 1;
    opts->sender = "AODB";
    opts->airport = "CTU";
    opts->mix = NULL;
    opts->clear_ppm = 30000;
    opts->lists = NULL;
    opts->oversize_bytes = 1024 * 1024 + 1;
}

int
mx_gen_options_check (const mx_gen_options_t *opts, char *reason, size_t size)
{
    char scratch [160];
    if (!reason || size == 0) {
        reason = scratch;
        size = sizeof (scratch);
    }
    reason [0] = 0;
    if (!opts) {
        snprintf (reason, size, "no options");
        return -1;
    }
    if (s_parse_day (opts->day) < 0) {
        snprintf (reason, size, "day '%s' is not a valid YYYY-MM-DD in 2001..2098",
                  opts->day? opts->day: "(null)");
        return -1;
    }
    if (opts->flights > 1000000) {
        snprintf (reason, size, "flights must be 0..1000000");
        return -1;
    }
    if (opts->updates > 0 && opts->flights == 0) {
        snprintf (reason, size, "updates need at least one flight");
        return -1;
    }
    if (opts->first_flid < 0 || opts->first_flid > INT64_MAX / 2) {
        snprintf (reason, size, "first FLID must be positive (0 = derived from the day)");
        return -1;
    }
    if (opts->first_seqn < 1 || opts->first_seqn > S_SEQN_MAX) {
        snprintf (reason, size, "first SEQN must be 1..999999");
        return -1;
    }
    if (!opts->sender || !*opts->sender || strlen (opts->sender) > 8) {
        snprintf (reason, size, "sender must be 1..8 characters");
        return -1;
    }
    for (const char *c = opts->sender; *c; c++)
        if (*c == '<' || *c == '>' || *c == '&' || *c == '"' || (unsigned char) *c < 0x21) {
            snprintf (reason, size, "sender must be plain printable text");
            return -1;
        }
    if (!opts->airport || strlen (opts->airport) != 3
    ||  opts->airport [0] < 'A' || opts->airport [0] > 'Z'
    ||  opts->airport [1] < 'A' || opts->airport [1] > 'Z'
    ||  opts->airport [2] < 'A' || opts->airport [2] > 'Z') {
        snprintf (reason, size, "airport must be three upper-case letters");
        return -1;
    }
    uint64_t shares = (uint64_t) opts->duplicate_ppm + opts->malformed_ppm
                    + opts->ignored_ppm + opts->unsupported_ppm + opts->reference_ppm
                    + opts->adhoc_ppm + opts->schd_delete_ppm + opts->hostile_ppm;
    if (shares > 1000000) {
        snprintf (reason, size, "the shares of the update stream (duplicate, malformed, ignored,"
                  " unsupported, reference, adhoc, schd-delete, hostile) exceed 100%%");
        return -1;
    }
    if (opts->clear_ppm > 1000000) {
        snprintf (reason, size, "clear share exceeds 100%%");
        return -1;
    }
    if (opts->fdel_type_ppm > 1000000) {
        snprintf (reason, size, "TYPE=FDEL share exceeds 100%%");
        return -1;
    }
    if (opts->hole_ppm > 1000000 || opts->late_ppm > 1000000) {
        snprintf (reason, size, "hole and late shares must each be at most 100%%");
        return -1;
    }
    if (opts->oversize_bytes < 1024 || opts->oversize_bytes > 256 * 1024 * 1024) {
        snprintf (reason, size, "oversized messages must be 1024 bytes..256 MiB");
        return -1;
    }
    if (opts->lists) {
        bool on [S_LIST_COUNT];
        size_t count;
        if (s_parse_lists (opts->lists, on, &count, reason, size))
            return -1;
    }
    if (opts->mix) {
        uint32_t weights [S_ST_COUNT];
        if (s_parse_mix (opts->mix, weights, reason, size))
            return -1;
    }
    return 0;
}

//  ---------------------------------------------------------------------
//  Public API

mx_gen_t *
mx_gen_new (const mx_gen_options_t *opts)
{
    if (mx_gen_options_check (opts, NULL, 0))
        return NULL;
    mx_gen_t *self = s_alloc (sizeof (mx_gen_t));
    self->opts = *opts;
    snprintf (self->day, sizeof (self->day), "%s", opts->day);
    snprintf (self->sender, sizeof (self->sender), "%s", opts->sender);
    snprintf (self->airport, sizeof (self->airport), "%s", opts->airport);
    self->opts.day = self->day;
    self->opts.sender = self->sender;
    self->opts.airport = self->airport;
    self->opts.mix = NULL;          //  not kept: the weights below are
    self->opts.lists = NULL;        //  nor this: list_on is
    if (opts->lists) {
        char reason [160];
        s_parse_lists (opts->lists, self->list_on, &self->lists_on, reason, sizeof (reason));
    }
    else {
        for (size_t i = 0; i < S_LIST_COUNT; i++)
            self->list_on [i] = true;
        self->lists_on = S_LIST_COUNT;
    }

    if (opts->mix) {
        char reason [160];
        s_parse_mix (opts->mix, self->weights, reason, sizeof (reason));
    }
    else
        for (size_t i = 0; i < S_ST_COUNT; i++)
            self->weights [i] = s_subtypes [i].weight;
    for (size_t i = 0; i < S_ST_COUNT; i++)
        self->weight_sum += self->weights [i];

    self->day0 = s_parse_day (self->day);
    if (self->opts.first_flid == 0)
        //  One block of 100000 FLIDs per day keeps several days apart
        self->opts.first_flid = (self->day0 / S_DAY - s_days_from_civil (2000, 1, 1))
                              * 100000 + 1;
    self->nflights = opts->flights;
    s_build_day (self);
    self->flights_cap = self->nflights;
    self->next_flid = self->opts.first_flid + (int64_t) self->nflights;
    s_rng_seed (&self->hole_rng, opts->seed ^ 0x401e5401e5401e54ULL);

    s_rng_seed (&self->rng, opts->seed);
    size_t per = opts->per_message? opts->per_message: (self->nflights? self->nflights: 1);
    self->schedule_msgs = (self->nflights + per - 1) / per;
    self->total = self->schedule_msgs + opts->updates;
    self->seqn = opts->first_seqn;
    self->clock_ms = self->day0 * 1000;
    //  Spread the updates over the day, ending shortly before midnight
    self->step_ms = opts->updates? (int64_t) (S_DAY - S_HOUR) * 1000 / (int64_t) opts->updates: 0;
    return self;
}

void
mx_gen_destroy (mx_gen_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    mx_gen_t *self = *self_p;
    for (size_t i = 0; i < S_RING; i++)
        free (self->ring [i]);
    free (self->flights);
    free (self->order);
    for (size_t i = 0; i < S_LIST_COUNT; i++) {
        free (self->lists [i].present);
        free (self->lists [i].rev);
    }
    free (self);
    *self_p = NULL;
}

char *
mx_gen_next (mx_gen_t *self, mx_gen_kind_t *kind)
{
    if (!self || self->produced >= self->total)
        return NULL;
    char *text;
    mx_gen_kind_t k;
    if (self->produced < self->schedule_msgs) {
        k = MX_GEN_SCHEDULE;
        text = s_schedule_message (self);
    }
    else {
        //  Time moves on by a random gap averaging step_ms
        self->clock_ms += (int64_t) s_below (&self->rng, (uint32_t) (2 * self->step_ms + 1));
        uint32_t r = s_below (&self->rng, 1000000);
        uint32_t dup = self->opts.duplicate_ppm;
        uint32_t bad = dup + self->opts.malformed_ppm;
        uint32_t ign = bad + self->opts.ignored_ppm;
        uint32_t uns = ign + self->opts.unsupported_ppm;
        uint32_t ref = uns + self->opts.reference_ppm;
        uint32_t adf = ref + self->opts.adhoc_ppm;
        uint32_t del = adf + self->opts.schd_delete_ppm;
        uint32_t hos = del + self->opts.hostile_ppm;
        if (r < dup && self->ring_len > 0) {
            k = MX_GEN_DUPLICATE;
            size_t i = s_below (&self->rng, (uint32_t) self->ring_len);
            text = s_strdup (self->ring [i]);
            self->meta = self->ring_meta [i];
            self->have_meta = true;
        }
        else
        if (r >= dup && r < bad) {
            k = MX_GEN_MALFORMED;
            s_defect_t defect = (s_defect_t) (1 + s_below (&self->rng, S_DEFECTS - 1));
            text = s_flop_message (self, defect);
        }
        else
        if (r >= bad && r < ign) {
            k = MX_GEN_IGNORED;
            text = s_ignored_message (self);
        }
        else
        if (r >= ign && r < uns) {
            k = MX_GEN_UNSUPPORTED;
            text = s_unsupported_message (self);
        }
        else
        if (r >= uns && r < ref) {
            k = MX_GEN_REFERENCE;
            text = s_reference_message (self);
        }
        else
        if (r >= ref && r < adf) {
            k = MX_GEN_ADHOC;
            text = s_adhoc_message (self);
        }
        else
        if (r >= adf && r < del) {
            k = MX_GEN_SCHD_DELETE;
            text = s_schd_delete_message (self);
        }
        else
        if (r >= del && r < hos) {
            k = MX_GEN_HOSTILE;
            text = s_hostile_message (self);
        }
        else {
            k = MX_GEN_UPDATE;
            text = s_flop_message (self, S_DEFECT_NONE);
            //  Remember it: duplicates re-send recent updates verbatim
            free (self->ring [self->ring_next]);
            self->ring [self->ring_next] = s_strdup (text);
            self->ring_meta [self->ring_next] = self->meta;
            self->ring_next = (self->ring_next + 1) % S_RING;
            if (self->ring_len < S_RING)
                self->ring_len++;
        }
    }
    //  The mailbox ID of the message: its own PRNG, so holes never change
    //  the texts
    bool late = false;
    if (self->opts.hole_ppm || self->opts.late_ppm) {
        if (self->opts.hole_ppm && s_chance (&self->hole_rng, self->opts.hole_ppm)) {
            uint64_t width = 1 + s_below (&self->hole_rng, 3);
            self->next_slot += width;
            self->holes += width;
        }
        late = self->opts.late_ppm && s_chance (&self->hole_rng, self->opts.late_ppm);
    }
    self->meta.slot = self->next_slot++;
    self->meta.late = late;
    if (late)
        self->late++;
    self->produced++;
    self->counts [k]++;
    if (kind)
        *kind = k;
    return text;
}

const mx_gen_meta_t *
mx_gen_meta (mx_gen_t *self)
{
    return self && self->have_meta? &self->meta: NULL;
}

size_t
mx_gen_total (mx_gen_t *self)
{
    return self? self->total: 0;
}

size_t
mx_gen_count (mx_gen_t *self, mx_gen_kind_t kind)
{
    if (!self || (int) kind < 0 || kind >= MX_GEN_KINDS)
        return 0;
    return self->counts [kind];
}

const char *
mx_gen_kind_name (mx_gen_kind_t kind)
{
    static const char *names [MX_GEN_KINDS] = {
        "schedule", "update", "duplicate", "malformed", "ignored", "unsupported",
        "reference", "adhoc", "schd-delete", "hostile"
    };
    return (int) kind >= 0 && kind < MX_GEN_KINDS? names [kind]: "unknown";
}

size_t
mx_gen_subtype_count (void)
{
    return S_ST_COUNT;
}

const char *
mx_gen_subtype_name (size_t index)
{
    return index < S_ST_COUNT? s_subtypes [index].name: NULL;
}

uint64_t
mx_gen_holes (mx_gen_t *self)
{
    return self? self->holes: 0;
}

size_t
mx_gen_late (mx_gen_t *self)
{
    return self? self->late: 0;
}

size_t
mx_gen_list_count (void)
{
    return S_LIST_COUNT;
}

const char *
mx_gen_list_name (size_t index)
{
    return index < S_LIST_COUNT? s_lists [index].name: NULL;
}

const char *
mx_gen_list_key (size_t index)
{
    return index < S_LIST_COUNT? s_lists [index].key: NULL;
}
