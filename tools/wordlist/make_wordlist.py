#!/usr/bin/env python3
"""Makes braid's pairing-code word list (src/engine/security/word_list_data.cpp).

The list is generated once and committed, so nothing is read or downloaded
at build time. Run it again only to change the rules below:

    apt-get install wamerican wamerican-small   # /usr/share/dict/american-english{,-small}
    tools/wordlist/make_wordlist.py > src/engine/security/word_list_data.cpp

Input: Debian's `wamerican` (SCOWL size 50: common American English).
Rules, in order (each says why):
  1. 3 to 8 lower-case ASCII letters: short to say and type, no proper
     nouns (capitalised), possessives or accents.
  2. Base forms only: a word is dropped when it is an inflection (-s, -es,
     -ed, -ing, -er, -est, -ly) of another word in the dictionary; "walk"
     stays, "walked" goes, so two codes never differ only by a suffix.
  3. Not in the blocklist below (offensive, sexual, violent, morbid,
     medical or otherwise unpleasant to read aloud to someone).
  4. Easy to say: at least one vowel, no run of more than three consonants,
     no letter three times in a row.
  5. The first four letters (the whole word for a 3-letter word) identify
     the word: no two words share them and a 3-letter word starts no other
     word, so a user may type just four letters.
  6. No two words are one edit apart (insert, delete, replace, swap of
     neighbours): a single typo never turns one code word into another, so
     it is always caught and can be named with a suggestion.
  7. Common first: words also in SCOWL size 35 (Debian's wamerican-small,
     if installed) rank first; then by how many inflections of them the
     dictionary has (a rough stand-in for frequency: everyday verbs and
     nouns have them all), then by shortness; the best 2048 are kept.
The output is sorted, so a word's index is its 11-bit value.
"""
import re
import sys

DICT = "/usr/share/dict/american-english"
# SCOWL size 35 (Debian's wamerican-small): the more common words. Optional;
# without it rule 7 ranks by inflections and length alone.
COMMON = "/usr/share/dict/american-english-small"
COUNT = 2048

# Stems, matched as a prefix of the word or as the whole word.
BLOCK_PREFIX = """
abort abuse addict adult anal anus arse ass bastard bitch blood bomb boob booz
breast brothel bugger bum butt cancer carcass casket chink coffin coke condom
corpse crack crap cripple crotch cum cunt damn dead death demon devil dick die
dildo disease dork drug drunk dumb dung dyke erotic execut fag fart fat feces
fetish fuck gay genital ghetto god gook gun hate hell heroin hitler homo horny
hooker idiot incest jerk jew junkie kill kink kkk knife lesbian lust molest
moron murder naked nazi negro nig nipple nude orgasm orgy pee penis perv piss
poison poop porn pot prick prostit puke pussy queer racis rape rapist rectum
retard satan scrotum semen sex shit sick slave slut smut sodom sperm spit stab
strip stupid suicid swastika terror testicl tit toilet torture turd ugly urine
vagina vomit weed whore wank weapon
""".split()
BLOCK_EXACT = """
ass cock hoe homo knob lick loser nuts pimp pube screw sucks toot tramp
bust beat bang blow bone hump grope wet spank booty corps gash gore kike spic
wop coon jap paki mick dago kraut limey chav pig hag nag shag spunk muff
bigot cretin leper lynch harlot harem lewd fetus fetich enema hernia lesion
embalm exhume burial morgue napalm martyr suck scum gut belly bosom armpit
pimple ulcer diaper fondle seduce widow maim impale behead corset bikini
kidnap hijack dagger sword evil ghoul vulgar mosque bible gospel pagan vicar
bishop altar psalm cult sect pious devout divine zombi zombie daemon lethal
menace virus toxin deaf mute numb lame taboo tabu wretch enslave nymph kosher
inmate felon prison jail bullet cannon abduct ambush hatred female woman girl
she man mama momma papa thee thou inane moron dumb dope nerd wimp slob
""".split()
# Harm, crime, grief and decay: not offensive, but unkind to read out to someone.
BLOCK_GLOOM = """
plague slay choke rob loot fraud thong poor scar doom dread cruel vile demise
dirge coward despot harass ransom usurp riot savage deceit bully liar libel
outlaw peril panic pain maggot rotten orphan exile evict bribe leech mourn
grieve lament wreck brawl grudge gloat jeer sullen crude sadist ravage perish sordid
sinful leer scab shaikh shaykh sermon nun boor gruel starve bawl stigma stupor spleen
""".split()
# Variant spellings and archaic words people do not expect.
BLOCK_ODD = """
ameer amir aline drouth faunae mes lemme goodby miaow appal distil enrol
fulfil instal ameba sabre tepee tipi plough
""".split()

VOWELS = set("aeiouy")
SUFFIXES = ("s", "es", "ed", "ing", "er", "est", "ly")


def words(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return {w.strip() for w in f}


def bases_of(w):
    """Possible base forms of w if w is an inflection."""
    out = []
    for suf in SUFFIXES:
        if w.endswith(suf) and len(w) > len(suf) + 2:
            stem = w[: -len(suf)]
            out += [stem, stem + "e"]
            if len(stem) >= 2 and stem[-1] == stem[-2]:
                out.append(stem[:-1])  # running -> run
            if stem.endswith("i"):
                out.append(stem[:-1] + "y")  # happily -> happy
    return out


def inflections(w, all_words):
    n = 0
    for suf in SUFFIXES:
        for form in (w + suf, w[:-1] + suf if w.endswith("e") else None, w + w[-1] + suf):
            if form and form in all_words:
                n += 1
                break
    return n


def blocked(w):
    return w in BLOCK_EXACT or w in BLOCK_GLOOM or w in BLOCK_ODD or any(w.startswith(p) for p in BLOCK_PREFIX)


def easy(w):
    if not any(c in VOWELS for c in w):
        return False
    if re.search(r"[^aeiouy]{4,}", w):
        return False
    return not re.search(r"(.)\1\1", w)


def key(w):
    return w[:4]


def one_edit(a, b):
    """True if a and b differ by one insert, delete, replace or adjacent swap."""
    if a == b:
        return True
    la, lb = len(a), len(b)
    if abs(la - lb) > 1:
        return False
    if la == lb:
        diff = [i for i in range(la) if a[i] != b[i]]
        if len(diff) == 1:
            return True
        return len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]
    if la > lb:
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    return a[i:] == b[i + 1:]


def main():
    all_words = words(DICT)
    try:
        common = words(COMMON)
    except OSError:
        common = all_words
    lower = {w for w in all_words if re.fullmatch(r"[a-z]{3,8}", w)}
    base = {w for w in lower if not any(b in all_words and b != w for b in bases_of(w))}
    candidates = [w for w in base if not blocked(w) and easy(w)]
    candidates.sort(key=lambda w: (w not in common, len(w) > 6, -inflections(w, all_words), len(w), w))

    chosen, keys, threes, key_heads = [], set(), set(), set()
    for w in candidates:
        k = key(w)
        if k in keys:
            continue
        # A 3-letter word must start no chosen word, nor start with one.
        if (len(w) == 3 and w in key_heads) or (len(w) > 3 and w[:3] in threes):
            continue
        if any(one_edit(w, o) for o in chosen):
            continue
        chosen.append(w)
        keys.add(k)
        key_heads.add(k[:3])
        if len(w) == 3:
            threes.add(w)
        if len(chosen) == COUNT:
            break
    if len(chosen) != COUNT:
        sys.exit(f"only {len(chosen)} words pass the rules; need {COUNT}")
    chosen.sort()

    print("// Generated by tools/wordlist/make_wordlist.py from Debian's wamerican")
    print("// (SCOWL); do not edit by hand. The rules are in that script.")
    print("#include \"word_list.h\"")
    print()
    print("namespace braid::security {")
    print()
    print(f"const std::array<std::string_view, {COUNT}> kCodeWords = {{")
    line = "   "
    for w in chosen:
        item = f' "{w}",'
        if len(line) + len(item) > 110:
            print(line)
            line = "   "
        line += item
    print(line)
    print("};")
    print()
    print("}  // namespace braid::security")


if __name__ == "__main__":
    main()
