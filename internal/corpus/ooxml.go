package corpus

import (
	"archive/zip"
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"strings"
)

func xmlEscape(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// writeZip writes files (name → content) in the given order.
func writeZip(path string, names []string, files map[string]string) error {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range names {
		w, err := zw.Create(n)
		if err != nil {
			return fmt.Errorf("zip %s: %w", n, err)
		}
		if _, err := w.Write([]byte(files[n])); err != nil {
			return fmt.Errorf("zip %s: %w", n, err)
		}
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("zip close: %w", err)
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

const xmlHeader = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` + "\n"

// WriteDOCX writes a minimal WordprocessingML document, one paragraph per
// line.
func WriteDOCX(path string, paragraphs []string) error {
	var body strings.Builder
	for _, p := range paragraphs {
		fmt.Fprintf(&body, `<w:p><w:r><w:t xml:space="preserve">%s</w:t></w:r></w:p>`, xmlEscape(p))
	}
	files := map[string]string{
		"[Content_Types].xml": xmlHeader + `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
			`<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>` +
			`<Default Extension="xml" ContentType="application/xml"/>` +
			`<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`,
		"_rels/.rels": xmlHeader + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`,
		"word/document.xml": xmlHeader + `<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>` +
			body.String() + `<w:sectPr><w:pgSz w:w="11906" w:h="16838"/><w:pgMar w:top="1440" w:right="1440" w:bottom="1440" w:left="1440" w:header="708" w:footer="708" w:gutter="0"/></w:sectPr></w:body></w:document>`,
	}
	return writeZip(path, []string{"[Content_Types].xml", "_rels/.rels", "word/document.xml"}, files)
}

// WriteXLSX writes a minimal SpreadsheetML workbook with one sheet of
// inline-string cells.
func WriteXLSX(path string, rows [][]string) error {
	var sheet strings.Builder
	for i, row := range rows {
		fmt.Fprintf(&sheet, `<row r="%d">`, i+1)
		for j, cell := range row {
			fmt.Fprintf(&sheet, `<c r="%s%d" t="inlineStr"><is><t>%s</t></is></c>`, string(rune('A'+j)), i+1, xmlEscape(cell))
		}
		sheet.WriteString(`</row>`)
	}
	files := map[string]string{
		"[Content_Types].xml": xmlHeader + `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
			`<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>` +
			`<Default Extension="xml" ContentType="application/xml"/>` +
			`<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>` +
			`<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>`,
		"_rels/.rels": xmlHeader + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>`,
		"xl/workbook.xml": xmlHeader + `<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">` +
			`<sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>`,
		"xl/_rels/workbook.xml.rels": xmlHeader + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>`,
		"xl/worksheets/sheet1.xml": xmlHeader + `<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>` +
			sheet.String() + `</sheetData></worksheet>`,
	}
	return writeZip(path, []string{"[Content_Types].xml", "_rels/.rels", "xl/workbook.xml", "xl/_rels/workbook.xml.rels", "xl/worksheets/sheet1.xml"}, files)
}

// WritePPTX writes a minimal PresentationML deck, one slide per entry, each
// slide one text box holding its lines.
func WritePPTX(path string, slides [][]string) error {
	const (
		nsP   = `xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"`
		rels  = `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">`
		relNS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"
	)
	emptyTree := `<p:cSld><p:spTree><p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/></p:spTree></p:cSld>`
	files := map[string]string{}
	names := []string{"[Content_Types].xml", "_rels/.rels", "ppt/presentation.xml", "ppt/_rels/presentation.xml.rels",
		"ppt/slideMasters/slideMaster1.xml", "ppt/slideMasters/_rels/slideMaster1.xml.rels",
		"ppt/slideLayouts/slideLayout1.xml", "ppt/slideLayouts/_rels/slideLayout1.xml.rels", "ppt/theme/theme1.xml"}
	var ct, presRels, sldIDs strings.Builder
	ct.WriteString(xmlHeader + `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
		`<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>` +
		`<Default Extension="xml" ContentType="application/xml"/>` +
		`<Override PartName="/ppt/presentation.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"/>` +
		`<Override PartName="/ppt/slideMasters/slideMaster1.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.slideMaster+xml"/>` +
		`<Override PartName="/ppt/slideLayouts/slideLayout1.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.slideLayout+xml"/>` +
		`<Override PartName="/ppt/theme/theme1.xml" ContentType="application/vnd.openxmlformats-officedocument.theme+xml"/>`)
	presRels.WriteString(xmlHeader + rels + `<Relationship Id="rIdM" Type="` + relNS + `slideMaster" Target="slideMasters/slideMaster1.xml"/>` +
		`<Relationship Id="rIdT" Type="` + relNS + `theme" Target="theme/theme1.xml"/>`)
	for i, lines := range slides {
		n := i + 1
		name := fmt.Sprintf("ppt/slides/slide%d.xml", n)
		var paras strings.Builder
		for _, l := range lines {
			fmt.Fprintf(&paras, `<a:p><a:r><a:rPr lang="en-US" sz="2000"/><a:t>%s</a:t></a:r></a:p>`, xmlEscape(l))
		}
		files[name] = xmlHeader + `<p:sld ` + nsP + `><p:cSld><p:spTree><p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/>` +
			`<p:sp><p:nvSpPr><p:cNvPr id="2" name="Text"/><p:cNvSpPr txBox="1"/><p:nvPr/></p:nvSpPr>` +
			`<p:spPr><a:xfrm><a:off x="457200" y="457200"/><a:ext cx="8229600" cy="5943600"/></a:xfrm><a:prstGeom prst="rect"><a:avLst/></a:prstGeom></p:spPr>` +
			`<p:txBody><a:bodyPr wrap="square"/><a:lstStyle/>` + paras.String() + `</p:txBody></p:sp></p:spTree></p:cSld></p:sld>`
		files[fmt.Sprintf("ppt/slides/_rels/slide%d.xml.rels", n)] = xmlHeader + rels +
			`<Relationship Id="rId1" Type="` + relNS + `slideLayout" Target="../slideLayouts/slideLayout1.xml"/></Relationships>`
		names = append(names, name, fmt.Sprintf("ppt/slides/_rels/slide%d.xml.rels", n))
		fmt.Fprintf(&ct, `<Override PartName="/%s" ContentType="application/vnd.openxmlformats-officedocument.presentationml.slide+xml"/>`, name)
		fmt.Fprintf(&presRels, `<Relationship Id="rIdS%d" Type="%sslide" Target="slides/slide%d.xml"/>`, n, relNS, n)
		fmt.Fprintf(&sldIDs, `<p:sldId id="%d" r:id="rIdS%d"/>`, 255+n, n)
	}
	ct.WriteString(`</Types>`)
	presRels.WriteString(`</Relationships>`)
	files["[Content_Types].xml"] = ct.String()
	files["_rels/.rels"] = xmlHeader + rels + `<Relationship Id="rId1" Type="` + relNS + `officeDocument" Target="ppt/presentation.xml"/></Relationships>`
	files["ppt/presentation.xml"] = xmlHeader + `<p:presentation ` + nsP + `><p:sldMasterIdLst><p:sldMasterId id="2147483648" r:id="rIdM"/></p:sldMasterIdLst>` +
		`<p:sldIdLst>` + sldIDs.String() + `</p:sldIdLst><p:sldSz cx="9144000" cy="6858000"/><p:notesSz cx="6858000" cy="9144000"/></p:presentation>`
	files["ppt/_rels/presentation.xml.rels"] = presRels.String()
	files["ppt/slideMasters/slideMaster1.xml"] = xmlHeader + `<p:sldMaster ` + nsP + `>` + emptyTree +
		`<p:clrMap bg1="lt1" tx1="dk1" bg2="lt2" tx2="dk2" accent1="accent1" accent2="accent2" accent3="accent3" accent4="accent4" accent5="accent5" accent6="accent6" hlink="hlink" folHlink="folHlink"/>` +
		`<p:sldLayoutIdLst><p:sldLayoutId id="2147483649" r:id="rId1"/></p:sldLayoutIdLst></p:sldMaster>`
	files["ppt/slideMasters/_rels/slideMaster1.xml.rels"] = xmlHeader + rels +
		`<Relationship Id="rId1" Type="` + relNS + `slideLayout" Target="../slideLayouts/slideLayout1.xml"/>` +
		`<Relationship Id="rId2" Type="` + relNS + `theme" Target="../theme/theme1.xml"/></Relationships>`
	files["ppt/slideLayouts/slideLayout1.xml"] = xmlHeader + `<p:sldLayout ` + nsP + ` type="blank">` + emptyTree + `</p:sldLayout>`
	files["ppt/slideLayouts/_rels/slideLayout1.xml.rels"] = xmlHeader + rels +
		`<Relationship Id="rId1" Type="` + relNS + `slideMaster" Target="../slideMasters/slideMaster1.xml"/></Relationships>`
	files["ppt/theme/theme1.xml"] = xmlHeader + themeXML
	return writeZip(path, names, files)
}

// themeXML is the smallest theme PowerPoint and LibreOffice accept.
const themeXML = `<a:theme xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" name="Plain"><a:themeElements>` +
	`<a:clrScheme name="Plain"><a:dk1><a:srgbClr val="000000"/></a:dk1><a:lt1><a:srgbClr val="FFFFFF"/></a:lt1><a:dk2><a:srgbClr val="1F1F1F"/></a:dk2><a:lt2><a:srgbClr val="EEEEEE"/></a:lt2>` +
	`<a:accent1><a:srgbClr val="4472C4"/></a:accent1><a:accent2><a:srgbClr val="ED7D31"/></a:accent2><a:accent3><a:srgbClr val="A5A5A5"/></a:accent3><a:accent4><a:srgbClr val="FFC000"/></a:accent4>` +
	`<a:accent5><a:srgbClr val="5B9BD5"/></a:accent5><a:accent6><a:srgbClr val="70AD47"/></a:accent6><a:hlink><a:srgbClr val="0563C1"/></a:hlink><a:folHlink><a:srgbClr val="954F72"/></a:folHlink></a:clrScheme>` +
	`<a:fontScheme name="Plain"><a:majorFont><a:latin typeface="Liberation Sans"/><a:ea typeface=""/><a:cs typeface=""/></a:majorFont><a:minorFont><a:latin typeface="Liberation Sans"/><a:ea typeface=""/><a:cs typeface=""/></a:minorFont></a:fontScheme>` +
	`<a:fmtScheme name="Plain"><a:fillStyleLst><a:solidFill><a:schemeClr val="phClr"/></a:solidFill><a:solidFill><a:schemeClr val="phClr"/></a:solidFill><a:solidFill><a:schemeClr val="phClr"/></a:solidFill></a:fillStyleLst>` +
	`<a:lnStyleLst><a:ln w="6350"><a:solidFill><a:schemeClr val="phClr"/></a:solidFill></a:ln><a:ln w="12700"><a:solidFill><a:schemeClr val="phClr"/></a:solidFill></a:ln><a:ln w="19050"><a:solidFill><a:schemeClr val="phClr"/></a:solidFill></a:ln></a:lnStyleLst>` +
	`<a:effectStyleLst><a:effectStyle><a:effectLst/></a:effectStyle><a:effectStyle><a:effectLst/></a:effectStyle><a:effectStyle><a:effectLst/></a:effectStyle></a:effectStyleLst>` +
	`<a:bgFillStyleLst><a:solidFill><a:schemeClr val="phClr"/></a:solidFill><a:solidFill><a:schemeClr val="phClr"/></a:solidFill><a:solidFill><a:schemeClr val="phClr"/></a:solidFill></a:bgFillStyleLst></a:fmtScheme>` +
	`</a:themeElements></a:theme>`
