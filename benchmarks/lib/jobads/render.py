"""One posting of an opening on a site: its sections filled from the template, laid out as the site lays ads out
(header and footer, labelled fields, headings, bullets, title format), the rewording and dropped sentences of a
repost, the messiness of a scraped ad, and its fields as a site carries them."""
from __future__ import annotations

import datetime as dt
import random

from benchmarks.lib.edits import edited
from benchmarks.lib.jobads.model import Office, Opening
from benchmarks.lib.jobads.text import (case_variant, display_title, fill_template, format_date, format_organisation,
                                        format_phone, slug, swap_synonyms, unpunctuated, with_article, with_html,
                                        with_typos)
from benchmarks.lib.jobads.world import COUNTRY_NAME, SYNONYMS, Pools, Site


class Renderer:
    """Renders postings with a split's pools (headings, short ads, re-advertisement words, teasers)."""

    def __init__(self, pools: Pools):
        self.pools = pools

    def contact_office(self, opening: Opening) -> Office:
        """The office whose phone and e-mail an ad gives: the branch's own, or head office's."""
        template = opening.template
        return opening.office if template.local_contacts else template.company.offices[0]

    # - rendering -

    def content(self, opening: Opening, posted: dt.date, readvert_of: dt.date | None) -> tuple[dict, dict]:
        """The opening's sections (lists of sentences) and the values its ads are filled with."""
        template, company = opening.template, opening.template.company
        lang = company.lang
        contact_office = self.contact_office(opening)
        role = opening.title
        deadline = posted + dt.timedelta(days=21 + (opening.jobid % 22))
        url = company.url_pattern.format(jobid=opening.jobid, slug=slug(role))
        values = dict(template.values)
        values.update({
            "company": company.name, "role": role, "Role": display_title(role, lang), "city": opening.city.name,
            "a_role": with_article(role), "years": opening.years, "ref": opening.ref, "contact": opening.contact,
            "email": contact_office.email,
            "phone": format_phone(contact_office.city.area, contact_office.phone, company.country, "national"),
            "deadline": format_date(deadline, lang), "url": url,
        })
        sections = {"company": list(company.description)}
        for section in ("role", "requirements", "offer", "apply"):
            sections[section] = [fill_template(t, {**values, **o})
                                 for t, o in zip(template.sentences[section], template.overrides[section])]
        if readvert_of is not None:
            sections["apply"].append(self.pools.readvert_line[lang].format(date=format_date(readvert_of, lang)))
        return sections, values

    def render(self, opening: Opening, site: Site, posted: dt.date, rng: random.Random, *, repost: bool,
               readvert_of: dt.date | None = None) -> dict:
        company = opening.template.company
        lang = company.lang
        sections, values = self.content(opening, posted, readvert_of)
        contact_office = self.contact_office(opening)
        country = company.country
        phone = format_phone(contact_office.city.area, contact_office.phone, country, site.phone)
        email = contact_office.email
        organisation = format_organisation(company.name, company.legal, country, site.organisation)
        category = company.sector.category[lang][site.category]
        title = display_title(opening.title, lang)
        if readvert_of is not None and rng.random() < 0.6:
            title = f"{title} ({rng.choice(self.pools.readvert[site.lang]).lower()})"
        short = rng.random() < site.short or (repost and rng.random() < 0.01)

        # the text of phone numbers inside sentences follows the site's style
        values = dict(values, phone=phone, organisation=organisation, category=category)
        for section in sections:
            sections[section] = [s.replace(format_phone(contact_office.city.area, contact_office.phone, country,
                                                        "national"), phone) for s in sections[section]]

        teaser = False
        if repost and not short:
            drop = rng.choice([0.0, 0.05, 0.1, 0.15, 0.2, 0.3])
            for section in ("role", "requirements", "offer", "apply"):
                kept = [s for s in sections[section] if rng.random() >= drop]
                sections[section] = kept or sections[section][:1]
            if rng.random() < 0.2:
                sections["company"] = sections["company"][:rng.randint(0, 2)]
            if rng.random() < 0.2:
                for section in sections:
                    rng.shuffle(sections[section])
            swaps = [pair for pair in SYNONYMS[lang] if rng.random() < 0.25]
            for section in sections:
                sections[section] = [swap_synonyms(s, swaps) for s in sections[section]]
            if rng.random() < 0.2:
                rate = rng.choice([0.02, 0.04])
                for section in sections:
                    sections[section] = [edited(s, lang, rate, rng)[0] if rng.random() < 0.5 else s
                                         for s in sections[section]]
            teaser = rng.random() < 0.04

        order = list(site.order)
        if repost and rng.random() < 0.3:
            middle = order[1:-1]
            rng.shuffle(middle)
            order = [order[0], *middle, order[-1]]

        fill = {"category": category, "city": opening.city.name, "year": posted.year, "company": company.name,
                "organisation": organisation, "country": COUNTRY_NAME[country]}
        header = [line.format(**fill).replace("..", ".") for line in site.header]
        footer = [line.format(**fill).replace("..", ".") for line in site.footer]
        title_line = site.title.format(title=title, TITLE=title.upper(), city=opening.city.name,
                                       company=company.name, salary=values["salary"])
        if rng.random() < 0.06:
            title_line = title_line.upper()
        title_field = title_line

        lines: list[str] = []  # the ad itself, between the site's header and footer
        meta_end = 0           # lines before it are the site's labelled fields
        if short:
            header, footer = header[:1], footer[-1:]
            line1, line2 = rng.choice(self.pools.short[lang])
            short_values = dict(values, ref_or_title=opening.ref if rng.random() < 0.5 else title)
            lines += [fill_template(line1, short_values), fill_template(line2, short_values)]
        else:
            meta = self._meta(site, opening, organisation, category, values, posted, contact_office, rng)
            if meta:
                lines += meta if site.meta == "lines" else [" | ".join(meta)]
            if readvert_of is not None:
                lines.append(f"{self.pools.readvert[site.lang][0]}: {format_date(posted, site.lang, site.date)}")
            meta_end = len(lines)
            if teaser:
                order = ["role", "requirements"]
                sections["role"] = sections["role"][:2]
                sections["requirements"] = sections["requirements"][:2]
            for section in order:
                sentences = sections.get(section) or []
                if not sentences:
                    continue
                heading = self.pools.headings[lang][section][site.heading_choice].format(company=company.name)
                lines.append("")
                if site.headings == "caps":
                    lines.append(heading.upper())
                elif site.headings == "colon":
                    lines.append(heading.rstrip("?") + ":")
                elif site.headings == "plain":
                    lines.append(heading)
                if site.bullets and section in ("role", "requirements", "offer"):
                    lines += [f"{site.bullets} {s}" for s in sentences]
                else:
                    lines.append(" ".join(sentences))
            if teaser:
                where = values["url"] if "url" not in site.omits and site.url else company.domain
                lines += ["", self.pools.teaser[lang].format(where=where)]
            lines.append("")

        # messiness of the ad (the site's own boilerplate is generated, and clean)
        prose = "\n".join(lines[meta_end:])
        if rng.random() < 0.25:
            prose = with_typos(prose, rng.randint(1, 4), rng)
        ad = "\n".join([*lines[:meta_end], prose])
        if rng.random() < 0.05:
            ad = unpunctuated(ad)
        if rng.random() < site.html:
            ad = with_html(ad, rng)
        body = "\n".join([*header, ad, *footer])

        fields: dict = {"title": title_field, "body": body}
        if site.organisation != "none" and "organisation" not in site.omits and not short:
            fields["organisation"] = organisation
        if "phone" not in site.omits and (not short or rng.random() < 0.5):
            fields["phone"] = phone
        if "email" not in site.omits and rng.random() < 0.85:
            fields["email"] = email if rng.random() < 0.9 else case_variant(email, company.domain)
        url = self._url(site, opening, values["url"], rng)
        if url:
            fields["url"] = url
        if "category" not in site.omits:
            fields["category"] = category
        location = self._location(site, opening)
        if location:
            fields["location"] = location
        return {"id": "", "lang": lang, "site": site.name, "group": "", "company": company.canonical,
                "posted": posted.isoformat(), "fields": fields, "text": f"{title_field}\n\n{body}"}

    def _meta(self, site: Site, opening: Opening, organisation: str, category: str, values: dict,
              posted: dt.date, contact_office: Office, rng: random.Random) -> list[str]:
        out = []
        shown = {"organisation": organisation if site.organisation != "none" else "",
                 "location": opening.city.name, "category": category, "ref": opening.ref,
                 "posted": format_date(posted, site.lang if site.kind != "international" else "en", site.date),
                 "salary": values["salary"], "hours": values["hours"], "contract": values["contract"]}
        for key, label in site.labels.items():
            if shown.get(key):
                out.append(f"{label}: {shown[key]}")
        if site.address or (rng.random() < 0.15):
            out.append(("Address" if site.lang == "en" else "Adres") + ": " + opening.office.address)
        if rng.random() < 0.15:
            out.append(("Contact" if site.lang == "en" else "Contactpersoon") + f": {opening.contact}, "
                       + format_phone(contact_office.city.area, contact_office.phone, opening.template.company.country,
                                      site.phone))
        return out

    def _url(self, site: Site, opening: Opening, canonical: str, rng: random.Random) -> str:
        if not site.url or "url" in site.omits:
            return ""
        if site.url == "board":
            path = "job" if site.lang == "en" else "vacature"
            return f"https://www.{site.name}/{path}/{rng.randint(10 ** 6, 10 ** 7)}"
        url = canonical
        if rng.random() < 0.3:
            url = url.replace("https://", "http://")
        if rng.random() < 0.3:
            url = url.replace("://www.", "://")
        if rng.random() < 0.3:
            url += "/"
        if site.url == "tracking" or rng.random() < 0.2:
            source = site.name.split(".")[0]
            url += rng.choice([f"?utm_source={source}&utm_medium=jobboard&utm_campaign=vacancies",
                               f"?src={source}", f"?ref={source}&id={rng.randint(100, 9999)}",
                               f"?utm_source={source}#apply"])
        return url

    def _location(self, site: Site, opening: Opening) -> dict | None:
        if not site.geo or "location" in site.omits:
            return None
        if site.geo == "city":
            return {"lat": round(opening.city.lat, 4), "lon": round(opening.city.lon, 4)}
        digits = 3 if site.geo == "round" else 6
        return {"lat": round(opening.office.coord[0], digits), "lon": round(opening.office.coord[1], digits)}

